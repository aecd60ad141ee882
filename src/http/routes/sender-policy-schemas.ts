// TypeBox schemas of the sender policy's routes (sender-policy.ts beside it) and MCP tools: the routes
// validate with them and /openapi.json is generated from them. Shapes only; what an entry must be
// (a domain or an address) is checked by sender-policy-rules.ts, whose messages name the entry.
import { Type } from 'typebox';
import { EMAIL_REQUIREMENTS, MAX_ALLOW_ENTRIES, MAX_ALLOW_ENTRY_CHARS } from '../../sender-policy/sender-policy-rules.js';

const EmailRule = Type.Object(
  {
    allow: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: MAX_ALLOW_ENTRY_CHARS }), {
        maxItems: MAX_ALLOW_ENTRIES,
        description:
          `Domains (example.com) and addresses (alice@example.org), at most ${MAX_ALLOW_ENTRIES}, compared case-insensitively with the mail's From address. ` +
          'A domain matches exactly: a subdomain is not its parent. Left out: any From address, still with the required authentication. An empty list allows no mail.',
      }),
    ),
    require: Type.Optional(
      Type.String({
        enum: [...EMAIL_REQUIREMENTS],
        description:
          'What proves the From domain (default dmarc): dmarc, DMARC passes for it; dkim, a DKIM signature whose d= is exactly that domain passes; ' +
          'none, the allow list alone (a From header is easy to forge: use none only for senders that sign nothing).',
      }),
    ),
  },
  { additionalProperties: false, description: 'The rule for inbound mail. Left out: mail is not judged.' },
);

const CaptureRule = Type.Object(
  {
    require_signature: Type.Optional(
      Type.Boolean({
        description:
          "true: a captured request counts only when its provider signature verified against this address's signing secret for that scheme " +
          '(PUT …/signing-secrets); an unsigned request, one of a scheme without a secret, or a bad signature is quarantined. Default false.',
      }),
    ),
  },
  { additionalProperties: false, description: 'The rule for the capture URL. Left out: captures are not judged.' },
);

export const SenderPolicyBody = Type.Object(
  { email: Type.Optional(EmailRule), capture: Type.Optional(CaptureRule) },
  { additionalProperties: false, title: 'SenderPolicy', description: 'Each part optional; {} judges nothing.' },
);

export const SenderPolicyResponse = Type.Object(
  {
    sender_policy: Type.Union([SenderPolicyBody, Type.Null()], {
      description: 'The policy in force, entries lower-case and email.require filled in; null when the address has none.',
    }),
    updated_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'When it was set; null when there is none.' }),
  },
  { additionalProperties: false, title: 'SenderPolicyResponse' },
);

export const SENDER_POLICY_COMPONENT_SCHEMAS = [SenderPolicyBody, SenderPolicyResponse];
