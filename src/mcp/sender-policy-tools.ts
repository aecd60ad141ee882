// MCP tools for the sender policy (design.md, "Sender policy and quarantine"): get_sender_policy and
// set_sender_policy read and replace the address's policy (set with null removes it), release_event
// makes a quarantined event an ordinary one. Registered with one line in mcp-tools.ts.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { ApiError } from '../domain/errors.js';
import type { AddressRecord } from '../domain/model.js';
import { eventJson } from '../domain/representation.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';
import type { SenderPolicies } from '../sender-policy/sender-policies.js';
import { senderPolicyView } from '../sender-policy/sender-policy-representation.js';
import { EMAIL_REQUIREMENTS, MAX_ALLOW_ENTRIES, MAX_ALLOW_ENTRY_CHARS } from '../sender-policy/sender-policy-rules.js';
import type { RunTool } from './tool-context.js';

const Policy = z.strictObject({
  email: z
    .strictObject({
      allow: z
        .array(z.string().min(1).max(MAX_ALLOW_ENTRY_CHARS))
        .max(MAX_ALLOW_ENTRIES)
        .optional()
        .describe("Domains (example.com) and addresses (alice@example.org) the mail's From may be; a domain matches exactly."),
      require: z
        .enum(EMAIL_REQUIREMENTS)
        .optional()
        .describe('dmarc (default): DMARC passes; dkim: a DKIM signature with d= the From domain passes; none: the list alone.'),
    })
    .optional(),
  capture: z
    .strictObject({
      require_signature: z.boolean().optional().describe("true: a capture counts only when its signature verified against this address's secret."),
    })
    .optional(),
});

const PolicyOutput = z.object({ sender_policy: z.record(z.string(), z.unknown()).nullable(), updated_at: z.string().nullable() });

export function registerSenderPolicyTools(
  server: McpServer,
  ctx: { service: ReturnAddressService; address: AddressRecord; senderPolicies?: SenderPolicies | undefined },
  run: RunTool,
  event: z.ZodType,
): void {
  const { service, address } = ctx;
  const policies = () => {
    if (!ctx.senderPolicies) throw new ApiError('not_found', 'Sender policies are not available on this server.');
    return ctx.senderPolicies;
  };

  server.registerTool(
    'get_sender_policy',
    {
      title: "Read the address's sender policy",
      description: 'Returns {sender_policy, updated_at}; sender_policy is null when none is set.',
      inputSchema: z.strictObject({}),
      outputSchema: PolicyOutput,
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    (_args, extra) => run('get_sender_policy', extra, async () => JSON.stringify(senderPolicyView(await policies().get(address)))),
  );

  server.registerTool(
    'set_sender_policy',
    {
      title: "Set the address's sender policy",
      description:
        'Replaces the policy (policy: null removes it) and returns {sender_policy, updated_at}. A mail or a capture that fails it is still stored, ' +
        'quarantined: trust.verified false, trust.reason naming the rule, and skipped by list_events, wait_for_event and claims until released ' +
        '(release_event) or acknowledged; list_events with state "quarantined" shows them.',
      inputSchema: z.strictObject({ policy: Policy.nullable() }),
      outputSchema: PolicyOutput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    (args, extra) =>
      run('set_sender_policy', extra, async () => {
        if (args.policy === null) {
          await policies().remove(address);
          return JSON.stringify({ sender_policy: null, updated_at: null });
        }
        return JSON.stringify(senderPolicyView(await policies().set(address, args.policy)));
      }),
  );

  server.registerTool(
    'release_event',
    {
      title: 'Release a quarantined event',
      description:
        'A quarantined event becomes an ordinary one at its own sequence and is returned as {event} with released_at. ' +
        'Release only what you checked: it failed the sender policy. An event never quarantined is an error (not_quarantined).',
      inputSchema: z.strictObject({ event_id: z.string().describe('The id (evt_…) of the quarantined event.') }),
      outputSchema: z.object({ event }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    (args, extra) => run('release_event', extra, async () => `{"event":${eventJson(await service.releaseEvent(address, args.event_id))}}`),
  );
}
