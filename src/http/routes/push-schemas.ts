// TypeBox schemas of the subscription routes (push.ts): the routes validate with them and
// /openapi.json is generated from them. Shapes only: the URL's rule, the secret's form and the
// filter are checked by subscriptions.ts, whose messages name the field.
import { Type } from 'typebox';
import { MAX_TTL_SECONDS, MAX_URL_CHARS, MIN_TTL_SECONDS } from '../../push/subscriptions.js';
import { AddressParams } from '../schemas.js';

const TypeFilter = Type.Union([Type.String(), Type.Array(Type.String(), { maxItems: 20 })], {
  description: 'Event types this subscription gets: exact (stripe.invoice.paid) or a prefix ending in .* (github.*); any of them. All when left out.',
});
const MatchFilter = Type.Union([Type.Array(Type.String(), { maxItems: 20 }), Type.Record(Type.String(), Type.Unknown())], {
  description:
    'Conditions that must all hold, as on reads: ["path=value", …] or {"path": value}; a dotted path into the event (data.action=opened, trust.verified=true).',
});

export const SubscriptionBody = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      maxLength: MAX_URL_CHARS,
      description:
        'Where each event is POSTed: an https URL whose host resolves to public addresses only (checked now and on every connection); http and private ' +
        'addresses only when the operator set PUSH_ALLOW_PRIVATE=true. Redirects are not followed.',
    }),
    secret: Type.Optional(
      Type.String({
        maxLength: 200,
        description:
          'The Standard Webhooks signing secret: whsec_ + base64 of 24-64 random bytes. Left out: one is generated and returned once, in this response only.',
      }),
    ),
    type: Type.Optional(TypeFilter),
    match: Type.Optional(MatchFilter),
    ttl_seconds: Type.Optional(
      Type.Integer({
        minimum: MIN_TTL_SECONDS,
        maximum: MAX_TTL_SECONDS,
        description: 'The subscription is deleted this long after its last create or refresh. Left out: it lasts until deleted (or its address expires).',
      }),
    ),
    after: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          'Deliver the events after this sequence. Default for a new subscription 0: every event still in the queue, as a new consumer reads. On a refresh, left out keeps the position.',
      }),
    ),
  },
  { additionalProperties: false, title: 'SubscriptionRequest' },
);

export const Subscription = Type.Object(
  {
    id: Type.String({ description: 'The subscription id (sub_…); its position is the named consumer push:<id>.' }),
    url: Type.String(),
    consumer: Type.String({ description: 'The named consumer holding its position: read it with consumer=push:<id> to take over by pull.' }),
    cursor: Type.Integer({ description: 'The sequence of the last event delivered (or passed over by the filter).' }),
    type: Type.Array(Type.String()),
    match: Type.Union([Type.Array(Type.String()), Type.Record(Type.String(), Type.Unknown())]),
    state: Type.Union([Type.Literal('active'), Type.Literal('retrying'), Type.Literal('paused')], {
      description:
        'active: delivering; retrying: the event after the cursor failed and is tried again at next_attempt_at; paused: nothing is sent until resumed.',
    }),
    paused_reason: Type.Union([Type.String(), Type.Null()], {
      description: 'Why it was paused: the attempts ran out (with the last error), or the receiver answered webhook-delivery: abort.',
    }),
    attempts: Type.Integer({ description: 'Failed attempts at the event after the cursor.' }),
    next_attempt_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    last_attempt_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    last_status: Type.Union([Type.Integer(), Type.Null()], { description: "The receiver's last HTTP status; null when no answer came." }),
    last_error: Type.Union([Type.String(), Type.Null()]),
    last_success_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    created_at: Type.String({ format: 'date-time' }),
    expires_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    secret: Type.Optional(Type.String({ description: 'Only in the response that generated it: keep it, it is never shown again.' })),
  },
  { additionalProperties: false, title: 'Subscription' },
);

export const SubscriptionList = Type.Object({ subscriptions: Type.Array(Subscription) }, { additionalProperties: false, title: 'SubscriptionList' });

export const SubscriptionParams = Type.Object({
  addressId: AddressParams.properties.addressId,
  subscriptionId: Type.String({ description: 'The subscription id (sub_…).' }),
});

export const PUSH_COMPONENT_SCHEMAS = [SubscriptionBody, Subscription, SubscriptionList];
