// MCP tools for claims (design.md, "Claims"): claim_events and settle_claim, thin adapters over
// the claim service (src/claims), with the HTTP routes' JSON shapes.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { claimResponseJson } from '../claims/claim-representation.js';
import { CLAIM_LIMITS } from '../claims/claim-rules.js';
import { claimInput, nackInput } from '../claims/claim-service.js';
import { ApiError } from '../domain/errors.js';
import { eventJson } from '../domain/representation.js';
import type { RunTool, ToolContext } from './tool-context.js';

const L = CLAIM_LIMITS;
const int = (r: { min: number; max: number; default: number }, what: string) =>
  z.number().int().min(r.min).max(r.max).optional().describe(`${what} ${r.min}-${r.max}, default ${r.default}.`);

const ClaimEventsInput = z.strictObject({
  max: int(L.max, 'How many events to lease at most, oldest claimable first.'),
  lease_seconds: int(L.lease_seconds, 'How long the lease lasts; settle before it ends, or the event is handed to another worker.'),
  wait: int(L.wait, 'Seconds to wait while nothing is claimable.'),
  max_deliveries: int(L.max_deliveries, 'After this many claims of an event without an ack it becomes dead.'),
  type: z
    .union([z.string(), z.array(z.string())])
    .optional()
    .describe('Only events of this type (or any of these); "github.*" is a prefix.'),
  match: z
    .record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]))
    .optional()
    .describe('Only events where each dotted path (data.…, metadata.…, type, source) holds this value.'),
});

const SettleClaimInput = z.strictObject({
  lease_id: z.string().min(1).describe('The lease_id of a claim from claim_events.'),
  action: z
    .enum(['ack', 'extend', 'nack'])
    .describe('ack: handled; extend: keep working (lease_seconds more); nack: give it back (delay_seconds, reason, dead).'),
  lease_seconds: int(L.lease_seconds, 'extend only: the lease now ends this many seconds from now.'),
  delay_seconds: int(L.delay_seconds, 'nack only: claimable again after this many seconds.'),
  reason: z.string().max(L.reason_chars).optional().describe('nack only: why (kept as dead_reason if the event dies).'),
  dead: z.boolean().optional().describe('nack only: true makes the event dead now (a poison message).'),
});

/** `event` is mcp-tools.ts's Event schema (passed in: the two files would otherwise import each other). */
export function registerClaimTools(server: McpServer, ctx: ToolContext, run: RunTool, event: z.ZodType): void {
  const Claim = z.object({ event, lease_id: z.string(), lease_expires_at: z.string(), delivery_count: z.number().int().min(1) });
  const ClaimResult = z.object({ claims: z.array(Claim) });
  const SettleResult = z.object({ event: event.optional(), lease_expires_at: z.string().optional() });
  const { claims, address } = ctx;

  server.registerTool(
    'claim_events',
    {
      title: 'Claim events (several workers on one address)',
      description:
        'Returns {claims: [{event, lease_id, lease_expires_at, delivery_count}]}: up to max of the oldest events that are not acknowledged, ' +
        'not dead and not leased to anyone else, leased to you for lease_seconds. Other claimers never get them while your lease lives. ' +
        'Handle each, then settle_claim with its lease_id: ack when done, extend to keep working, nack to give it back. ' +
        'With wait > 0 and nothing claimable, the call holds until something is. {claims: []} when nothing was.',
      inputSchema: ClaimEventsInput,
      outputSchema: ClaimResult,
      annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    },
    (args, extra) => run('claim_events', extra, async (signal) => claimResponseJson(await claims.claimEvents(address, claimInput(args), signal))),
  );

  server.registerTool(
    'settle_claim',
    {
      title: 'Ack, extend or nack a claimed event',
      description:
        'Settles a claim through its lease_id. ack → {event} (acknowledged_at set); extend → {lease_expires_at}; nack → {event} ' +
        '(claimable again after delay_seconds, or dead with dead_at/dead_reason after max_deliveries or with dead: true). ' +
        'Error lease_lost: the event was claimed again by someone else after your lease ran out (or is already acked, nacked or dead); do not redo its side effects.',
      inputSchema: SettleClaimInput,
      outputSchema: SettleResult,
      annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    },
    (args, extra) =>
      run('settle_claim', extra, async () => {
        const misplaced =
          args.action !== 'extend' && args.lease_seconds !== undefined
            ? 'lease_seconds'
            : args.action !== 'nack' && (args.delay_seconds !== undefined || args.reason !== undefined || args.dead !== undefined)
              ? 'delay_seconds, reason and dead'
              : null;
        if (misplaced) throw new ApiError('invalid_request', `Invalid argument: ${misplaced} do not apply to action '${args.action}'.`);
        switch (args.action) {
          case 'ack':
            return `{"event":${eventJson(await claims.ack(address, args.lease_id))}}`;
          case 'extend':
            return JSON.stringify({
              lease_expires_at: new Date(await claims.extend(address, args.lease_id, args.lease_seconds ?? L.lease_seconds.default)).toISOString(),
            });
          case 'nack':
            return `{"event":${eventJson(await claims.nack(address, args.lease_id, nackInput(args)))}}`;
        }
      }),
  );
}
