// The Events extension's webhook mode (design.md, "MCP, current revision"): events/subscribe creates
// or refreshes a webhook subscription (src/push/) and events/unsubscribe deletes it. The id is
// deterministic, mcp.<kind>.<hash of address, event type, arguments and URL>, so the client that
// owns its subscriptions gets the same id for the same request: subscribing again is the refresh
// (a new TTL, secret or nothing changed) and keeps the position. Deliveries are the extension's
// occurrences with X-MCP-Subscription-Id (push/webhook-body.ts), signed with Standard Webhooks,
// retried and paused exactly as the REST API's subscriptions are.
import { createHash } from 'node:crypto';
import { ApiError } from '../domain/errors.js';
import type { AddressRecord } from '../domain/model.js';
import { MAX_TTL_SECONDS, MIN_TTL_SECONDS, type Subscriptions, type SubscriptionView } from '../push/subscriptions.js';
import { MCP_SUBSCRIPTION_HEADER, MCP_SUBSCRIPTION_PREFIX } from '../push/webhook-body.js';
import { EVENT_TYPES, EventsError, INVALID_PARAMS, NOT_FOUND, RESOURCE_EXHAUSTED, readSubscription } from './events-extension.js';

/** A subscription's TTL when the client names none: it refreshes before then, or delivery stops. */
export const DEFAULT_TTL_MS = 24 * 3600 * 1000;

const invalid = (message: string) => new EventsError(INVALID_PARAMS, `Invalid params: ${message}`);

/** JSON with object keys sorted, so equal arguments hash equally whatever their order. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (typeof v === 'object' && v !== null) {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** The deterministic id: the same address, event type, arguments and URL give the same id. */
export function subscriptionId(addressId: string, name: string, args: unknown, url: string): string {
  const hash = createHash('sha256')
    .update(canonical([addressId, name, args ?? {}, url]))
    .digest('hex')
    .slice(0, 32);
  return `${MCP_SUBSCRIPTION_PREFIX}${name.slice('return_address.'.length)}.${hash}`;
}

interface Delivery {
  url: string;
  secret: string | undefined;
}

function readDelivery(params: Record<string, unknown>): Delivery {
  const d = params.delivery;
  if (typeof d !== 'object' || d === null || Array.isArray(d)) {
    throw invalid('params.delivery must be {"mode": "webhook", "url": "https://…", "secret"?: "whsec_…"}.');
  }
  const o = d as Record<string, unknown>;
  if (o.mode !== undefined && o.mode !== 'webhook') throw invalid('params.delivery.mode must be "webhook" (poll and push are events/poll and events/stream).');
  if (typeof o.url !== 'string') throw invalid('params.delivery.url must be the https URL to POST occurrences to.');
  if (o.secret !== undefined && typeof o.secret !== 'string')
    throw invalid('params.delivery.secret must be a whsec_ string, or left out to have one generated.');
  return { url: o.url, secret: o.secret };
}

/** An ApiError of Subscriptions in the extension's terms, naming the MCP params. */
function toEventsError(err: unknown): unknown {
  if (!(err instanceof ApiError)) return err;
  const message = err.message
    .replace("body field 'url'", 'params.delivery.url')
    .replace("body field 'secret'", 'params.delivery.secret')
    .replace("body field 'ttl_seconds'", 'params.ttlMs');
  if (err.code === 'too_many_subscriptions') return new EventsError(RESOURCE_EXHAUSTED, message);
  if (err.status < 500) return new EventsError(INVALID_PARAMS, `Invalid params: ${message}`);
  return err;
}

function resultOf(view: SubscriptionView, ttlMs: number): Record<string, unknown> {
  const r = view.record;
  return {
    resultType: 'complete',
    id: r.id,
    ttlMs,
    expiresAt: r.expiresAt === null ? null : new Date(r.expiresAt).toISOString(),
    cursor: String(view.cursor),
    ...(view.secret === undefined ? {} : { secret: view.secret }),
    _meta: { header: MCP_SUBSCRIPTION_HEADER, consumer: `push:${r.id}`, ...(r.pausedAt === null ? {} : { paused: r.pausedReason }) },
  };
}

/** events/subscribe: creates the subscription, or refreshes it (same id: TTL, secret; the position stays). */
export async function subscribeEvents(subscriptions: Subscriptions, address: AddressRecord, params: Record<string, unknown>): Promise<Record<string, unknown>> {
  const sub = readSubscription(params);
  const args = (params.arguments ?? {}) as Record<string, unknown>;
  if (args.state !== undefined) throw invalid("argument 'state' is not offered for webhook delivery: it sends the events default reads list.");
  const delivery = readDelivery(params);
  const ttlRaw = params.ttlMs;
  if (
    ttlRaw !== undefined &&
    ttlRaw !== null &&
    (typeof ttlRaw !== 'number' || !Number.isInteger(ttlRaw) || ttlRaw < MIN_TTL_SECONDS * 1000 || ttlRaw > MAX_TTL_SECONDS * 1000)
  ) {
    throw invalid(`params.ttlMs must be an integer from ${MIN_TTL_SECONDS * 1000} to ${MAX_TTL_SECONDS * 1000} (default ${DEFAULT_TTL_MS}).`);
  }
  const ttlMs = typeof ttlRaw === 'number' ? ttlRaw : DEFAULT_TTL_MS;
  // A per-ingress type is the catch-all with one condition more, stored with the subscription's filter.
  const ingress = EVENT_TYPES.get(sub.name);
  let match = args.match as readonly string[] | Readonly<Record<string, unknown>> | undefined;
  if (ingress !== undefined) {
    match = Array.isArray(match) ? [...(match as string[]), `trust.ingress=${ingress}`] : { ...(match ?? {}), 'trust.ingress': ingress };
  }
  const id = subscriptionId(address.id, sub.name, params.arguments, delivery.url);
  // A refresh that names no secret keeps the one in use (a client refreshing on a timer must not
  // have its receiver's secret replaced); only a new subscription gets one generated and shown.
  let secret = delivery.secret;
  if (secret === undefined) {
    const existing = await subscriptions.subscriptions.getSubscription(address.id, id);
    if (existing) secret = subscriptions.seal.open(address.id, id, existing.secret) ?? undefined;
  }
  try {
    const view = await subscriptions.create(address, {
      id,
      url: delivery.url,
      ...(secret === undefined ? {} : { secret }),
      ...(args.type === undefined ? {} : { type: args.type as string | string[] }),
      ...(match === undefined ? {} : { match }),
      ttl_seconds: Math.ceil(ttlMs / 1000),
      // A cursor string moves the position (a new subscription starts after it); null or none keeps
      // it (0 for a new one), so repeating the very request that made it, cursor null, is a refresh.
      ...(typeof params.cursor === 'string' ? { after: sub.cursor } : {}),
    });
    return resultOf(view, ttlMs);
  } catch (err) {
    throw toEventsError(err);
  }
}

/** events/unsubscribe: by id, or by the request that made it (name, arguments, delivery.url). */
export async function unsubscribeEvents(
  subscriptions: Subscriptions,
  address: AddressRecord,
  params: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  let id: string;
  if (params.id !== undefined) {
    if (typeof params.id !== 'string' || !params.id.startsWith(MCP_SUBSCRIPTION_PREFIX)) {
      throw invalid(`params.id must be an id events/subscribe returned (it starts with "${MCP_SUBSCRIPTION_PREFIX}").`);
    }
    id = params.id;
  } else {
    const sub = readSubscription(params);
    id = subscriptionId(address.id, sub.name, params.arguments, readDelivery(params).url);
  }
  try {
    await subscriptions.remove(address, id);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      throw new EventsError(NOT_FOUND, `No subscription '${id.slice(0, 100)}' on this address (expired, or already removed).`, { kind: 'subscription' });
    }
    throw toEventsError(err);
  }
  return { resultType: 'complete', id };
}
