// MCP tools for approvals (design.md, "Approvals"): request_approval creates one and returns its
// page's URL (to send to the person through the agent's own channel); get_approval reads its
// status and answers. The answer itself arrives as the event approval.decided: wait for it with
// wait_for_event {match: {"data.approval_id": id}}. Registered with one line in mcp-tools.ts.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { FIELD_TYPES } from '../approvals/approval-model.js';
import { approvalView } from '../approvals/approval-representation.js';
import { LIMITS } from '../approvals/approval-rules.js';
import type { ApprovalService } from '../approvals/approval-service.js';
import { ApiError } from '../domain/errors.js';
import type { AddressRecord } from '../domain/model.js';

type Run = (tool: string, extra: { signal: AbortSignal }, fn: (signal: AbortSignal) => Promise<string>) => Promise<CallToolResult>;

/** The tool's input, with the service's own shortest lifetime (MIN_APPROVAL_SECONDS) as its minimum; one per minimum. */
const requestApprovalInputs = new Map<number, ReturnType<typeof buildRequestApprovalInput>>();
const requestApprovalInput = (minSeconds: number) => {
  let schema = requestApprovalInputs.get(minSeconds);
  if (!schema) requestApprovalInputs.set(minSeconds, (schema = buildRequestApprovalInput(minSeconds)));
  return schema;
};

const buildRequestApprovalInput = (minSeconds: number) =>
  z.strictObject({
    question: z.string().min(1).max(LIMITS.question).describe('What the person is asked (plain text).'),
    details: z.string().max(LIMITS.details).optional().describe('Plain text shown under the question.'),
    options: z
      .array(z.strictObject({ id: z.string().min(1).max(LIMITS.optionId), label: z.string().min(1).max(LIMITS.optionLabel) }))
      .min(LIMITS.optionsMin)
      .max(LIMITS.optionsMax)
      .optional()
      .describe('One button each; default approve/deny.'),
    fields: z
      .array(
        z.strictObject({
          name: z.string().min(1).max(LIMITS.fieldName),
          label: z.string().min(1).max(LIMITS.fieldLabel),
          type: z.enum(FIELD_TYPES),
          required: z.boolean().optional(),
          choices: z.array(z.string().min(1).max(LIMITS.choice)).min(1).max(LIMITS.choices).optional(),
        }),
      )
      .max(LIMITS.fields)
      .optional()
      .describe('Inputs the person fills in with the answer.'),
    expires_in_seconds: z
      .number()
      .int()
      .min(minSeconds)
      .optional()
      .describe(`At least ${minSeconds} (MIN_APPROVAL_SECONDS), at most the address's remaining lifetime. Default 86400, or that lifetime if shorter.`),
    max_responses: z.number().int().min(1).max(LIMITS.maxResponses).optional().describe('Default 1.'),
  });

const ApprovalOutput = z.object({
  approval: z
    .object({
      id: z.string(),
      status: z.enum(['pending', 'decided', 'expired', 'cancelled']),
      url: z.string().optional().describe('Only from request_approval.'),
      question: z.string(),
      responses: z.number().int(),
      max_responses: z.number().int(),
      expires_at: z.string(),
      answers: z.array(z.record(z.string(), z.unknown())).optional().describe('From get_approval: every answer recorded.'),
    })
    .passthrough(),
});

const GetApprovalInput = z.strictObject({ approval_id: z.string().describe('The id returned by request_approval (apr_…).') });

export function registerApprovalTools(server: McpServer, address: AddressRecord, approvals: ApprovalService | undefined, run: Run): void {
  const service = () => {
    if (!approvals) throw new ApiError('not_found', 'Approvals are not available on this server.');
    return approvals;
  };
  server.registerTool(
    'request_approval',
    {
      title: 'Ask a person (approval page)',
      description:
        'Creates an approval and returns {approval} with its url: send that URL to the person through your own channel ' +
        '(chat, mail). Opening it changes nothing; their click appends the event approval.decided (data.option, data.label, data.fields, data.reason) ' +
        'to this queue. Then call wait_for_event with match {"data.approval_id": "<approval.id>"} (it also matches approval.expired / approval.cancelled) ' +
        'and ack_event once you acted. The url is shown only here.',
      inputSchema: requestApprovalInput(approvals?.minApprovalSeconds ?? 60),
      outputSchema: ApprovalOutput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    (args, extra) =>
      run('request_approval', extra, async () => {
        const { approval, url } = await service().create(address, args);
        return JSON.stringify({ approval: approvalView(approval, Date.now(), { url }) });
      }),
  );

  server.registerTool(
    'get_approval',
    {
      title: 'Read an approval',
      description:
        'Returns {approval}: its status (pending, decided, expired, cancelled), the count of responses and every answer recorded (option, label, reason, fields, responder, decided_at).',
      inputSchema: GetApprovalInput,
      outputSchema: ApprovalOutput,
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    (args, extra) =>
      run('get_approval', extra, async () => {
        const { approval, answers } = await service().get(address, args.approval_id);
        return JSON.stringify({ approval: approvalView(approval, Date.now(), { answers }) });
      }),
  );
}
