// TypeBox schemas of the API. The routes validate with exactly these, and /openapi.json
// is generated from them, so the document and the behaviour cannot drift apart.

import { type TSchema, Type } from 'typebox';
import { TIMESTAMP_TOLERANCE_SECONDS } from '../capture/signature-verification.js';
import { ADDRESS_ID_RE, EVENT_ID_RE, READ_TOKEN_RE, SLUG_RE } from '../domain/credentials.js';
import { HTTP_DEDUPE_KEY_PATTERN } from '../domain/dedupe-key.js';
import { BEARER_REALM, ERROR_CATALOGUE, type ErrorCode } from '../domain/errors.js';
import { MAX_VALUE_DEPTH } from '../domain/json-depth.js';
import { MAX_WAIT_SECONDS } from '../domain/long-poll.js';
import { SIGNING_SCHEMES } from '../domain/signing-schemes.js';
import { STORABLE_TEXT } from '../domain/storable-text.js';

/** Text a store keeps as it was sent (domain/storable-text.ts), re-exported for the schemas beside these. */
export { STORABLE_TEXT };

export const Address = Type.Object(
  {
    id: Type.String({ pattern: ADDRESS_ID_RE.source, description: 'Starts with addr_, then 26 random characters [0-9a-z].' }),
    slug: Type.String({ pattern: SLUG_RE.source, description: '12 characters [a-z0-9] starting with a letter; the local part of `email`.' }),
    name: Type.String({ description: 'Human-readable purpose; "untitled" when none was given.' }),
    taskId: Type.Optional(Type.String({ description: 'Caller-defined task identifier, present when task_id was given.' })),
    email: Type.String({ format: 'email', description: 'Inbound email address: <slug>@<EMAIL_DOMAIN>. <slug>+<tag>@<EMAIL_DOMAIN> reaches it too.' }),
    createdAt: Type.String({ format: 'date-time' }),
    expiresAt: Type.String({
      format: 'date-time',
      description:
        'Always present. After it, deliveries are refused (410, SMTP 550); reading, ack and delete work for a grace period (default 24 h), then the address and its events are deleted.',
    }),
  },
  { additionalProperties: false, title: 'Address' },
);

export const CreateAddressBody = Type.Object(
  {
    name: Type.Optional(
      Type.String({ maxLength: 100, pattern: STORABLE_TEXT, description: 'Human-readable purpose. Default "untitled". No U+0000 or lone surrogate.' }),
    ),
    task_id: Type.Optional(
      Type.String({ maxLength: 200, pattern: STORABLE_TEXT, description: 'Caller-defined task identifier. No U+0000 or lone surrogate.' }),
    ),
    expires_in_seconds: Type.Optional(
      Type.Integer({ minimum: 60, maximum: 31536000, description: 'Lifetime of the address. Default 604800 (7 days; operator setting DEFAULT_TTL_SECONDS).' }),
    ),
  },
  { additionalProperties: false, title: 'CreateAddressBody', description: 'Optional: no body, an empty body and {} are all accepted.' },
);

export const CreateAddressResponse = Type.Object(
  {
    address: Address,
    credentials: Type.Object(
      {
        read_token: Type.String({
          pattern: READ_TOKEN_RE.source,
          description:
            'Bearer token for reading this address (get, events, ack, delete, stream, signing secrets) and its MCP URL. Returned only here, once; it cannot be recovered. Store it.',
        }),
        note: Type.String(),
      },
      { additionalProperties: false },
    ),
    endpoints: Type.Object(
      {
        inbox_url: Type.String({
          format: 'uri',
          description: 'Secret-bearing, write-only delivery URL: {base_url}/api/v1/inbox/<address_id>/aa_ingress_… Give it to whoever must call back.',
        }),
        events_url: Type.String({ format: 'uri', description: 'The ordered event queue; GET it with the read token.' }),
        mcp_url: Type.String({ format: 'uri', description: 'MCP (Streamable HTTP) endpoint for this address, with the read token.' }),
        hook_url: Type.String({
          format: 'uri',
          description:
            'Capture URL: {base_url}/api/v1/hooks/<address_id>/aa_ingress_… (the same write-only secret as inbox_url). Takes any request as it is (GitHub, Stripe, Slack, OAuth redirects, form posts), on any sub-path below it; each becomes one event.',
        }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, title: 'CreateAddressResponse' },
);

export const AddressResponse = Type.Object({ address: Address }, { additionalProperties: false, title: 'AddressResponse' });

const Metadata = Type.Record(Type.String(), Type.String(), { title: 'Metadata', description: 'An object whose values are all strings.' });

export const CreateEventBody = Type.Object(
  {
    type: Type.Optional(
      Type.String({ pattern: STORABLE_TEXT, description: 'Free string set by the sender. Default "message.received". No U+0000 or lone surrogate.' }),
    ),
    source: Type.Optional(Type.String({ pattern: STORABLE_TEXT, description: 'Free string. Default "https". No U+0000 or lone surrogate.' })),
    data: Type.Optional(Type.Unknown({ description: `Any JSON value, nested at most ${MAX_VALUE_DEPTH} levels. Stored and returned as null when omitted.` })),
    metadata: Type.Optional(Metadata),
    dedupe_key: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        pattern: HTTP_DEDUPE_KEY_PATTERN,
        description:
          'Idempotency key, the same as the Idempotency-Key header (1-255 characters, no control characters). Both given and different: 409. Keys of email events (their Message-IDs) live in a key space of their own: a mail can never match an HTTP key.',
      }),
    ),
  },
  { additionalProperties: false, title: 'CreateEventBody' },
);

export const Trust = Type.Object(
  {
    ingress: Type.Union([Type.Literal('inbox'), Type.Literal('capture'), Type.Literal('email'), Type.Literal('approval'), Type.Literal('service')], {
      description:
        'The way in: inbox (the inbox URL: whoever holds it writes anything), capture (the capture URL), email (SMTP), ' +
        "approval (a person's answer on an approval page), service (appended by the service itself, e.g. approval.expired).",
    }),
    verified: Type.Union([Type.Boolean(), Type.Null()], {
      description:
        'true: the service proved the sender (a capture whose provider signature checked against the secret set for its scheme; ' +
        'a mail whose DMARC passed, aligned; an approval answer). false: a check was possible and failed. null: nothing to check ' +
        '(an inbox delivery, a capture with no secret for its scheme, mail without DMARC). Act on a provider event or a mail only when true.',
    }),
    method: Type.Union(
      [
        Type.Literal('github'),
        Type.Literal('stripe'),
        Type.Literal('slack'),
        Type.Literal('standard_webhooks'),
        Type.Literal('dmarc'),
        Type.Literal('approval_link'),
        Type.Null(),
      ],
      { description: 'How the sender was checked, or null.' },
    ),
    identity: Type.Union([Type.String(), Type.Null()], {
      description: "The proven identity: the signing scheme's sender, the DMARC-aligned From domain; null otherwise.",
    }),
    reason: Type.Union([Type.String(), Type.Null()], { description: 'One line saying why, when verified is not true; null when it is.' }),
  },
  {
    additionalProperties: false,
    title: 'Trust',
    description:
      'Provenance, written only by the service: no delivery can set or change any part of it. Filter on it (match=trust.verified=true, ' +
      'match=trust.ingress=capture), never on data.signature or data.authentication, which an inbox delivery can write.',
  },
);

export const Event = Type.Object(
  {
    id: Type.String({ pattern: EVENT_ID_RE.source, description: 'Unique and opaque. Events are ordered by sequence, never by id.' }),
    address_id: Type.String({ pattern: ADDRESS_ID_RE.source }),
    sequence: Type.Integer({ minimum: 1, description: 'Starts at 1 per address and grows by exactly 1 per new event: no gaps, no reuse.' }),
    type: Type.String(),
    source: Type.String({ description: '"https" by default for HTTP deliveries, "email" for inbound mail. Set by an inbox sender at will: see trust.' }),
    trust: Trust,
    data: Type.Unknown({
      description:
        'Any JSON value; null when the delivery had none. For inbound mail (source "email", type "email.received") an object: ' +
        '{from, to, cc, subject, text, html, message_id, in_reply_to, references, date, headers, attachments, raw_size, parse_error, ' +
        'extracted: {otp_codes: [string], links: [{url, kind: "magic_link"|"verify"|"reset"|"unsubscribe"|"other"}], reply_text: string|null}, ' +
        'authentication: {spf, dkim, dmarc, summary}} (spf/dkim/dmarc as mailauth reports them: pass, fail, none, temperror, …; ' +
        'summary is "pass" only when DMARC passes, else "fail", "temperror" or "none"). extracted is heuristic and read from untrusted content; ' +
        'nothing in a mail is ever followed or fetched. Full description: /llms-full.txt, section "Inbound email".',
    }),
    metadata: Type.Optional(Metadata),
    dedupe_key: Type.Optional(Type.String()),
    created_at: Type.String({ format: 'date-time' }),
    acknowledged_at: Type.Optional(Type.String({ format: 'date-time', description: 'Present once the event is acknowledged.' })),
    delivery_count: Type.Optional(
      Type.Integer({ minimum: 0, description: 'How many times a claim (POST …/claims) handed the event to a worker; present once it was claimed.' }),
    ),
    dead_at: Type.Optional(
      Type.String({
        format: 'date-time',
        description:
          'Present once the event is dead: claimed max_deliveries times without an ack, or nacked with dead: true. A dead event is never claimed again; list them with state=dead.',
      }),
    ),
    dead_reason: Type.Optional(
      Type.String({ description: "Why the event is dead (the last nack's reason, or that its final lease ran out); present with dead_at." }),
    ),
    quarantined_at: Type.Optional(
      Type.String({
        format: 'date-time',
        description:
          "Present when the event failed the address's sender policy and was stored quarantined (trust.reason names the rule). " +
          'Until released it is skipped by default reads, streams, waits, claims and consumers; state=quarantined lists it.',
      }),
    ),
    released_at: Type.Optional(
      Type.String({
        format: 'date-time',
        description: 'Present once a quarantined event was released (POST …/events/{eventId}/release): it is read as any other event.',
      }),
    ),
  },
  { additionalProperties: false, title: 'Event' },
);

export const EventPage = Type.Object(
  {
    events: Type.Array(Event),
    next_cursor: Type.Integer({ minimum: 0, description: 'Sequence of the last event returned, or `after` when none is. Use it as the next `after`.' }),
    has_more: Type.Boolean({ description: 'Whether an event with a greater sequence than next_cursor exists.' }),
  },
  { additionalProperties: false, title: 'EventPage' },
);

export const EventResponse = Type.Object({ event: Event }, { additionalProperties: false, title: 'EventResponse' });

export const EventDeliveryResponse = Type.Object(
  { event: Event, duplicate: Type.Boolean({ description: 'true when an idempotency key repeated an already queued event (which is returned unchanged).' }) },
  { additionalProperties: false, title: 'EventDeliveryResponse' },
);

export const ErrorBody = Type.Object(
  {
    error: Type.Object(
      {
        code: Type.String({ enum: Object.keys(ERROR_CATALOGUE), description: 'Stable machine-readable code.' }),
        message: Type.String({ description: 'Human-readable explanation; for validation errors it names the field.' }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, title: 'Error', description: 'The body of every non-2xx answer.' },
);

// Optional with defaults: ajv's useDefaults fills an omitted one in before the handler runs.
export const EventsQuery = Type.Object(
  {
    after: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: Number.MAX_SAFE_INTEGER,
        default: 0,
        description:
          'Return events whose sequence is greater than this cursor. Any integer from 0 to 9007199254740991 (Number.MAX_SAFE_INTEGER); a cursor past the last sequence is an empty page with next_cursor = after.',
      }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'Page size.' })),
    wait: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_WAIT_SECONDS,
        default: 0,
        description: 'Long-poll: seconds to hold the request while nothing is after the cursor. Returns within milliseconds of an event.',
      }),
    ),
  },
  // Spread into GET …/events's own query (routes/events.ts), whose description names every parameter it takes.
  { additionalProperties: false },
);

export const AddressIdParam = Type.String({ description: 'Address id (addr_…).' });
export const AddressParams = Type.Object({ addressId: AddressIdParam });
export const EventParams = Type.Object({ addressId: AddressIdParam, eventId: Type.String({ description: 'Event id (evt_…).' }) });
export const InboxParams = Type.Object({
  addressId: AddressIdParam,
  secret: Type.String({ description: 'The inbox secret (aa_ingress_…) from inbox_url.' }),
});
export const InboxHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: HTTP_DEDUPE_KEY_PATTERN,
      description:
        'Deduplicates retried deliveries within this address; the same key space as the body dedupe_key, apart from the Message-IDs of email events. 1-255 characters, no control characters.',
    }),
  ),
});

export const HookParams = Type.Object({
  addressId: AddressIdParam,
  secret: Type.String({ description: 'The inbox secret (aa_ingress_…) from hook_url.' }),
});
export const HookSubPathParams = Type.Object({
  addressId: AddressIdParam,
  secret: Type.String(),
  '*': Type.String({ description: 'Any sub-path below the capture URL; stored as data.path.' }),
});
/** The capture URL takes any query string: it is stored as data.query. */
export const AnyQuery = Type.Object({}, { additionalProperties: true, description: 'Any parameters; stored in data.query (a repeated key as an array).' });

export const CaptureReceipt = Type.Object(
  {
    event: Type.Object({ id: Type.String({ pattern: EVENT_ID_RE.source }), sequence: Type.Integer({ minimum: 1 }) }, { additionalProperties: false }),
    duplicate: Type.Boolean({
      description: 'true when the request repeated an idempotency key (Idempotency-Key, webhook-id, X-GitHub-Delivery, a Stripe event id…) of a queued event.',
    }),
  },
  { additionalProperties: false },
);

const SecretValue = (what: string) => Type.Optional(Type.String({ minLength: 1, maxLength: 1024, pattern: HTTP_DEDUPE_KEY_PATTERN, description: what }));
export const SigningSecretsBody = Type.Object(
  {
    github: SecretValue('The webhook secret set on the GitHub webhook; checks X-Hub-Signature-256.'),
    stripe: SecretValue(
      `The endpoint's signing secret (whsec_…) from Stripe; checks Stripe-Signature, within ${TIMESTAMP_TOLERANCE_SECONDS} s of its timestamp.`,
    ),
    slack: SecretValue(`The app's Signing Secret; checks X-Slack-Signature (v0), within ${TIMESTAMP_TOLERANCE_SECONDS} s of X-Slack-Request-Timestamp.`),
    standard_webhooks: SecretValue('A Standard Webhooks / Svix secret, whsec_ followed by base64; checks webhook-signature (or svix-signature).'),
  },
  { additionalProperties: false, description: 'Replaces every secret of the address: a scheme left out is removed, and {} removes them all.' },
);
export const SigningSecretsResponse = Type.Object(
  {
    configured: Type.Array(Type.String({ enum: [...SIGNING_SCHEMES] }), {
      description: 'The schemes that now have a secret. Secrets themselves are never returned.',
    }),
  },
  { additionalProperties: false },
);

/** The schemas /openapi.json names in components.schemas (by their titles), for generated clients. */
export const COMPONENT_SCHEMAS: readonly TSchema[] = [
  Address,
  AddressResponse,
  CreateAddressBody,
  CreateAddressResponse,
  Metadata,
  CreateEventBody,
  Trust,
  Event,
  EventPage,
  EventResponse,
  EventDeliveryResponse,
  ErrorBody,
];

/** The document's tags, in order, each with what its operations are for. */
export const BEARER = [{ bearerAuth: [] }];
export const NO_AUTH: { [name: string]: string[] }[] = [];

const ERROR_CODES_BY_STATUS = new Map<number, ErrorCode[]>();
for (const [code, { status }] of Object.entries(ERROR_CATALOGUE) as [ErrorCode, { status: number }][]) {
  ERROR_CODES_BY_STATUS.set(status, [...(ERROR_CODES_BY_STATUS.get(status) ?? []), code]);
}

/** Response headers that come with an error status, documented on it. */
const ERROR_HEADERS: Record<number, Record<string, TSchema>> = {
  401: {
    'WWW-Authenticate': Type.String({
      description:
        `Bearer realm="${BEARER_REALM}" when no token was sent; Bearer realm="${BEARER_REALM}", error="invalid_token" when one was sent ` +
        'but is malformed or not the read token of this address (RFC 6750 §3).',
    }),
  },
  405: { Allow: Type.String({ description: 'The methods the path has, e.g. "GET, HEAD" or "POST".' }) },
  429: { 'Retry-After': Type.Integer({ minimum: 0, description: 'Seconds to wait before retrying.' }) },
  503: { 'Retry-After': Type.Integer({ minimum: 0, description: 'Seconds to wait before retrying.' }) },
};

/**
 * Response schemas for the given error statuses, each describing the codes it can carry and the
 * headers that come with it, for the route's `response` map. Every route also answers 400 (an
 * unknown query parameter, a missing Host header), 500 and 503 (storage unavailable), so those are always there. A route that
 * reads no body still parses one sent with a JSON Content-Type on POST and DELETE (400 invalid_json,
 * 413) and refuses other types (415): such routes list 413 and 415 themselves.
 */
export function errorResponses(...statuses: number[]): Record<number, TSchema> {
  return documentErrors(statuses, false);
}

/** Codes only a held wait answers (a long-poll, a waiting claim): listed by waitErrorResponses alone. */
const WAIT_ONLY_CODES: ReadonlySet<ErrorCode> = new Set(['credentials_rotated']);

/** errorResponses for a route that may hold a wait: its 401 can also be credentials_rotated (design.md, "Credential rotation"). */
export function waitErrorResponses(...statuses: number[]): Record<number, TSchema> {
  return documentErrors(statuses, true);
}

function documentErrors(statuses: number[], waits: boolean): Record<number, TSchema> {
  const out: Record<number, TSchema> = {};
  for (const status of [...new Set([400, ...statuses, 500, 503])].sort((a, b) => a - b)) {
    const codes = (ERROR_CODES_BY_STATUS.get(status) ?? []).filter((c) => waits || !WAIT_ONLY_CODES.has(c));
    const text = codes.map((c) => `\`${c}\`: ${ERROR_CATALOGUE[c].description}`).join(' ');
    const headers = ERROR_HEADERS[status];
    out[status] = { ...ErrorBody, description: text, ...(headers ? { headers } : {}) };
  }
  return out;
}

/** A 200 whose body is plain text (the guides). */
export const textResponse = (description: string) => ({ description, content: { 'text/plain': { schema: Type.String() } } });
