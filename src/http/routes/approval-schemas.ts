// The approvals' request and response schemas (design.md, "Approvals"), beside their routes.
import { Type } from 'typebox';
import { FIELD_TYPES } from '../../approvals/approval-model.js';
import { APPROVAL_ID_RE, FIELD_NAME_PATTERN, LIMITS, OPTION_ID_PATTERN } from '../../approvals/approval-rules.js';
import { STORABLE_TEXT } from '../schemas.js';

const text = (maxLength: number, description: string, minLength = 0) => Type.String({ minLength, maxLength, pattern: STORABLE_TEXT, description });

export const ApprovalOption = Type.Object(
  {
    id: Type.String({
      pattern: OPTION_ID_PATTERN,
      description: `1-${LIMITS.optionId} characters [A-Za-z0-9_.-]; unique within the approval. The answer's data.option.`,
    }),
    label: text(LIMITS.optionLabel, "The button's text.", 1),
  },
  { additionalProperties: false, title: 'ApprovalOption' },
);

export const ApprovalField = Type.Object(
  {
    name: Type.String({
      pattern: FIELD_NAME_PATTERN,
      description: "A letter, then letters, digits or _ (at most 40); unique. The key in the answer's data.fields.",
    }),
    label: text(LIMITS.fieldLabel, 'What the page shows beside the input.', 1),
    // Written out as a tuple (not FIELD_TYPES.map) so its static type is the five literals, which the client package's types are generated from.
    type: Type.Union(
      [Type.Literal(FIELD_TYPES[0]), Type.Literal(FIELD_TYPES[1]), Type.Literal(FIELD_TYPES[2]), Type.Literal(FIELD_TYPES[3]), Type.Literal(FIELD_TYPES[4])],
      { description: 'text (one line, ≤ 1,000 characters), textarea (≤ 10,000), number, boolean (a checkbox), select (one of choices).' },
    ),
    required: Type.Optional(
      Type.Boolean({ description: 'An answer without it is refused (400; the page names the field). A required boolean must be ticked. Default false.' }),
    ),
    choices: Type.Optional(
      Type.Array(text(LIMITS.choice, 'A choice.', 1), { minItems: 1, maxItems: LIMITS.choices, description: 'Only for type select: its values, each once.' }),
    ),
  },
  { additionalProperties: false, title: 'ApprovalField' },
);

export const createApprovalBody = (minApprovalSeconds: number) =>
  Type.Object(
    {
      question: text(LIMITS.question, "What the person is asked; shown as the page's heading (plain text).", 1),
      details: Type.Optional(text(LIMITS.details, 'Plain text shown under the question (line breaks kept, never markup).')),
      options: Type.Optional(
        Type.Array(ApprovalOption, {
          minItems: LIMITS.optionsMin,
          maxItems: LIMITS.optionsMax,
          description: 'One button each, in order. Default [{"id":"approve","label":"Approve"},{"id":"deny","label":"Deny"}].',
        }),
      ),
      fields: Type.Optional(Type.Array(ApprovalField, { maxItems: LIMITS.fields, description: 'Inputs the person fills in with the answer.' })),
      expires_in_seconds: Type.Optional(
        Type.Integer({
          minimum: minApprovalSeconds,
          description: `At least ${minApprovalSeconds} (MIN_APPROVAL_SECONDS), at most the address's remaining lifetime. Default 86,400, or the address's remaining lifetime if shorter.`,
        }),
      ),
      max_responses: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: LIMITS.maxResponses,
          description: 'Answers recorded before the approval closes (each one an approval.decided event). Default 1.',
        }),
      ),
    },
    { additionalProperties: false, title: 'CreateApprovalBody' },
  );

const Answer = Type.Object(
  {
    n: Type.Integer({ minimum: 1, description: "The answer's number; its event's dedupe_key is approval:{id}:{n}." }),
    event_id: Type.String(),
    option: Type.String(),
    label: Type.String(),
    reason: Type.Union([Type.String(), Type.Null()]),
    fields: Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()])),
    responder: Type.Object({ remote_ip: Type.String(), user_agent: Type.Union([Type.String(), Type.Null()]) }),
    decided_at: Type.String({ format: 'date-time' }),
  },
  { title: 'ApprovalAnswer', description: 'The data of the approval.decided event it made, with its number and event id.' },
);

export const Approval = Type.Object(
  {
    id: Type.String({ pattern: APPROVAL_ID_RE.source }),
    status: Type.Union([Type.Literal('pending'), Type.Literal('decided'), Type.Literal('expired'), Type.Literal('cancelled')], {
      description: 'pending until max_responses answers (decided), expiry (expired when nobody answered, decided otherwise) or a DELETE (cancelled).',
    }),
    url: Type.Optional(
      Type.String({
        format: 'uri',
        description:
          'Only in the 201: {base_url}/approve/{id}/{secret}. Send it to the person through your own channel. The secret is stored hashed and cannot be shown again.',
      }),
    ),
    question: Type.String(),
    details: Type.Optional(Type.String()),
    options: Type.Array(ApprovalOption),
    fields: Type.Array(ApprovalField),
    max_responses: Type.Integer(),
    responses: Type.Integer({ description: 'Answers recorded so far.' }),
    created_at: Type.String({ format: 'date-time' }),
    expires_at: Type.String({ format: 'date-time' }),
    closed_at: Type.Optional(Type.String({ format: 'date-time' })),
    answers: Type.Optional(Type.Array(Answer, { description: 'On GET and DELETE: every answer recorded, oldest first.' })),
  },
  { additionalProperties: false, title: 'Approval' },
);

export const ApprovalResponse = Type.Object({ approval: Approval }, { additionalProperties: false, title: 'ApprovalResponse' });

export const ApprovalParams = Type.Object({
  addressId: Type.String({ description: 'Address id (addr_…).' }),
  approvalId: Type.String({ description: 'Approval id (apr_…).' }),
});
export const ApprovalPageParams = Type.Object({
  approvalId: Type.String({ description: 'Approval id (apr_…).' }),
  secret: Type.String({ description: "The approval's secret (aa_approve_…), as in the url of the 201." }),
});

/**
 * The page's query: anything, ignored. Chat and mail tools append their own parameters to a link
 * they carry (`utm_source`, `fbclid`, …); only the path is the credential, so the page shows and a
 * form posted back to that same URL records normally.
 */
export const ApprovalPageQuery = Type.Object(
  {},
  {
    additionalProperties: true,
    description: 'Any query parameters (utm_*, fbclid, …, added by the channel that carried the link) are accepted and ignored.',
  },
);

export const AnswerBody = Type.Object(
  {
    option: Type.String({ description: "One of the approval's option ids." }),
    reason: Type.Optional(Type.String({ maxLength: LIMITS.reason })),
    fields: Type.Optional(Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()]))),
  },
  {
    additionalProperties: false,
    title: 'ApprovalAnswerBody',
    description: "From a program (application/json). The page's form sends the same as application/x-www-form-urlencoded: option, reason and field.<name>.",
  },
);
