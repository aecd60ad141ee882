// POST, GET, DELETE …/subscriptions[/{subscriptionId}] and POST …/{subscriptionId}/resume
// (design.md, "Push subscriptions"). Bearer routes; the credential is checked first
// (requireReadToken), then the body.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ReturnAddressService } from '../../domain/return-address-service.js';
import { pushConsumerName, type Subscriptions, type SubscriptionView } from '../../push/subscriptions.js';
import { authenticatedAddress, requireReadToken } from '../plugins/authentication.js';
import { AddressParams, BEARER, errorResponses } from '../schemas.js';
import { Subscription, SubscriptionBody, SubscriptionList, SubscriptionParams } from './push-schemas.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function subscriptionView(v: SubscriptionView) {
  const r = v.record;
  const filter = JSON.parse(r.filter) as { type: string | string[]; match: string[] | Record<string, unknown> };
  return {
    id: r.id,
    url: r.url,
    consumer: pushConsumerName(r.id),
    cursor: v.cursor,
    type: typeof filter.type === 'string' ? [filter.type] : filter.type,
    match: filter.match,
    state: r.pausedAt !== null ? ('paused' as const) : r.attempts > 0 ? ('retrying' as const) : ('active' as const),
    paused_reason: r.pausedReason,
    attempts: r.attempts,
    next_attempt_at: iso(r.nextAttemptAt),
    last_attempt_at: iso(r.lastAttemptAt),
    last_status: r.lastStatus,
    last_error: r.lastError,
    last_success_at: iso(r.lastSuccessAt),
    created_at: new Date(r.createdAt).toISOString(),
    expires_at: iso(r.expiresAt),
    ...(v.secret === undefined ? {} : { secret: v.secret }),
  };
}

const PATH = '/api/v1/addresses/:addressId/subscriptions';
const GUIDE = 'Guide: /llms-full.txt, "Push subscriptions".';

export const pushRoutes =
  ({ service, subscriptions }: { service: ReturnAddressService; subscriptions: Subscriptions }): FastifyPluginAsyncTypebox =>
  async (app) => {
    const auth = requireReadToken(service);

    app.post(
      PATH,
      {
        onRequest: auth,
        schema: {
          operationId: 'createSubscription',
          summary: 'Push events to a URL (a webhook subscription)',
          description:
            'Each matching event is POSTed to url, one per request, in sequence order, signed with Standard Webhooks (webhook-id = the event id, ' +
            'webhook-timestamp, webhook-signature); the body is the Event JSON (over 256 KiB: data replaced by a raw.url reference). A 2xx within 15 s ' +
            "moves the subscription's position (the consumer push:<id>); anything else is retried on Svix's schedule (immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h), " +
            'honouring Retry-After, and nothing after that event is sent meanwhile. After the last attempt, or an answer with webhook-delivery: abort, it is paused ' +
            `until resumed. Delivery is at-least-once: deduplicate on webhook-id. 201 with the generated secret when none was given. ${GUIDE}`,
          tags: ['push'],
          security: BEARER,
          params: AddressParams,
          body: SubscriptionBody,
          response: { 201: Subscription, ...errorResponses(400, 401, 404, 409, 413, 415) },
        },
      },
      async (request, reply) => {
        const view = await subscriptions.create(authenticatedAddress(request), request.body);
        return reply.code(201).send(subscriptionView(view));
      },
    );

    app.get(
      PATH,
      {
        onRequest: auth,
        schema: {
          operationId: 'listSubscriptions',
          summary: "List the address's webhook subscriptions",
          description: `Each with its position and delivery state; never the secret. ${GUIDE}`,
          tags: ['push'],
          security: BEARER,
          params: AddressParams,
          response: { 200: SubscriptionList, ...errorResponses(401, 404) },
        },
      },
      async (request) => ({ subscriptions: (await subscriptions.list(authenticatedAddress(request))).map(subscriptionView) }),
    );

    app.get(
      `${PATH}/:subscriptionId`,
      {
        onRequest: auth,
        schema: {
          operationId: 'getSubscription',
          summary: 'Show one webhook subscription',
          description: `Its position, delivery state and, when paused, why. ${GUIDE}`,
          tags: ['push'],
          security: BEARER,
          params: SubscriptionParams,
          response: { 200: Subscription, ...errorResponses(401, 404) },
        },
      },
      async (request) => subscriptionView(await subscriptions.get(authenticatedAddress(request), request.params.subscriptionId)),
    );

    app.delete(
      `${PATH}/:subscriptionId`,
      {
        onRequest: auth,
        schema: {
          operationId: 'deleteSubscription',
          summary: 'Delete a webhook subscription',
          description:
            'Nothing more is sent (an attempt under way may still arrive). Its consumer push:<id> stays, so a reader can go on from its position by pull; ' +
            `delete that with DELETE …/consumers/push:<id>. ${GUIDE}`,
          tags: ['push'],
          security: BEARER,
          params: SubscriptionParams,
          response: { 204: { type: 'null', description: 'Deleted; empty body.' }, ...errorResponses(401, 404) },
        },
      },
      async (request, reply) => {
        await subscriptions.remove(authenticatedAddress(request), request.params.subscriptionId);
        return reply.code(204).send(null);
      },
    );

    app.post(
      `${PATH}/:subscriptionId/resume`,
      {
        onRequest: auth,
        schema: {
          operationId: 'resumeSubscription',
          summary: 'Resume a paused (or retrying) webhook subscription',
          description: `Clears the pause and the failed attempts: the event after the position is sent again at once, then the rest in order. ${GUIDE}`,
          tags: ['push'],
          security: BEARER,
          params: SubscriptionParams,
          response: { 200: Subscription, ...errorResponses(401, 404) },
        },
      },
      async (request) => subscriptionView(await subscriptions.resume(authenticatedAddress(request), request.params.subscriptionId)),
    );
  };
