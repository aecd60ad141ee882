// TypeBox schemas of the claim routes (claims.ts beside it): the routes validate with them
// and /openapi.json is generated from them.
import { Type } from 'typebox';
import { CLAIM_LIMITS, LEASE_ID_PATTERN } from '../../claims/claim-rules.js';
import { MAX_MATCH_CONDITIONS, MAX_TYPE_PATTERNS } from '../../domain/event-filter.js';
import { Event, STORABLE_TEXT } from '../schemas.js';

const L = CLAIM_LIMITS;
const int = (r: { min: number; max: number; default: number }, description: string) =>
  Type.Optional(Type.Integer({ minimum: r.min, maximum: r.max, default: r.default, description }));

export const ClaimBody = Type.Object(
  {
    max: int(L.max, 'How many events to lease at most, oldest claimable first.'),
    lease_seconds: int(
      L.lease_seconds,
      'How long each lease lasts. Until then no other claim gets the event; after it, the event is claimable again (redelivered).',
    ),
    wait: int(
      L.wait,
      'Long-poll: seconds to hold the request while nothing is claimable. It answers within milliseconds of a new event, a nack, or a lease or delay running out.',
    ),
    max_deliveries: int(
      L.max_deliveries,
      'An event whose lease runs out, or that is nacked, after this many claims of it becomes dead (dead_at, dead_reason) and is never claimed again.',
    ),
    type: Type.Optional(
      Type.Union([Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { minItems: 1, maxItems: MAX_TYPE_PATTERNS })], {
        description: 'Claim only events of this type, or of any of these; a type ending in .* is a prefix (github.*).',
      }),
    ),
    match: Type.Optional(
      Type.Union(
        [
          Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]), { description: 'path → value' }),
          Type.Array(Type.String(), { maxItems: MAX_MATCH_CONDITIONS, description: '"path=value" texts' }),
        ],
        {
          description: `Claim only events where each dotted path (data.…, metadata.…, type, source, …) holds the value (its JSON text for numbers, true, false, null); at most ${MAX_MATCH_CONDITIONS}.`,
        },
      ),
    ),
  },
  {
    additionalProperties: false,
    title: 'ClaimRequest',
    description: 'Every field is optional: no body, an empty body and {} claim one event with a 60 s lease.',
  },
);

const LeaseId = Type.String({
  pattern: LEASE_ID_PATTERN,
  description: 'The lease: a fencing token. Only the latest lease of an event may ack, extend or nack it.',
});

export const Claim = Type.Object(
  {
    event: Event,
    lease_id: LeaseId,
    lease_expires_at: Type.String({ format: 'date-time', description: 'Ack, extend or nack before this; after it another claim may take the event.' }),
    delivery_count: Type.Integer({ minimum: 1, description: 'How many times the event has been claimed, this claim included.' }),
  },
  { additionalProperties: false, title: 'Claim' },
);

export const ClaimResponse = Type.Object(
  {
    claims: Type.Array(Claim, { description: 'Oldest first; empty when nothing was claimable before the wait ended.' }),
  },
  { additionalProperties: false, title: 'ClaimResponse' },
);

export const LeaseParams = Type.Object({
  addressId: Type.String({ description: 'Address id (addr_…).' }),
  leaseId: Type.String({ description: 'A lease id from a claim (lease_…).' }),
});

export const ExtendBody = Type.Object(
  {
    lease_seconds: int(L.lease_seconds, 'The lease now ends this many seconds from now.'),
  },
  { additionalProperties: false, title: 'ExtendRequest' },
);

export const ExtendResponse = Type.Object(
  {
    lease_expires_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false, title: 'ExtendResponse' },
);

export const NackBody = Type.Object(
  {
    delay_seconds: int(L.delay_seconds, 'The event is claimable again after this many seconds (0: at once).'),
    reason: Type.Optional(
      Type.String({ maxLength: L.reason_chars, pattern: STORABLE_TEXT, description: 'Why; kept as dead_reason when the event becomes dead.' }),
    ),
    dead: Type.Optional(Type.Boolean({ default: false, description: 'true: the event becomes dead now (a poison message), whatever its deliveries.' })),
  },
  { additionalProperties: false, title: 'NackRequest' },
);

/** The schemas /openapi.json names in components.schemas. */
export const CLAIM_COMPONENT_SCHEMAS = [ClaimBody, Claim, ClaimResponse, ExtendBody, ExtendResponse, NackBody];
