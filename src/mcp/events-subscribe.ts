// The Events extension's webhook mode as the working group's draft specifies it (design.md, "MCP,
// current revision"): events/subscribe creates or refreshes a webhook subscription (src/push/) and
// events/unsubscribe deletes it. The subscription key is (principal, delivery.url, name,
// arguments): the principal is the address whose read token authenticated the request, and the id
// is derived from the key, mcp.<kind>.<hash>, so the same request again is the refresh (a new TTL
// grant, the secret replaced, a paused delivery reactivated; the position kept). The client
// supplies the whsec_ secret; the server never generates one. A new subscription starts only after
// its URL passed the verification handshake (callback-verification.ts). Deliveries are the
// extension's occurrences with X-MCP-Subscription-Id (push/webhook-body.ts), signed with Standard
// Webhooks, in order, retried and paused as the REST API's subscriptions are, except that a 413 is
// not retried and a 410 pauses at once (push/mcp-delivery.ts).
import { createHash } from 'node:crypto';
import { ApiError } from '../domain/errors.js';
import type { AddressRecord } from '../domain/model.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';
import { checkSecret } from '../push/subscription-secret.js';
import type { SubscriptionRecord } from '../push/subscription-store.js';
import { MAX_TTL_SECONDS, MIN_TTL_SECONDS, type Subscriptions } from '../push/subscriptions.js';
import { MCP_SUBSCRIPTION_HEADER, MCP_SUBSCRIPTION_PREFIX } from '../push/webhook-body.js';
import { type CallbackFailure, type CallbackVerifier, failureOf, statusFailure } from './callback-verification.js';
import { EVENT_TYPES, EventsError, INVALID_PARAMS, NOT_FOUND, readSubscription, type Subscription } from './events-extension.js';
import { startOf } from './events-position.js';
import { WEBHOOK_NOT_FOUND, WEBHOOK_RESOURCE_EXHAUSTED, WEBHOOK_UNSUPPORTED } from './webhook-errors.js';

/** The grant when the client suggests no TTL: it refreshes before then, or delivery stops. */
export const DEFAULT_TTL_MS = 24 * 3600 * 1000;

export interface WebhookDeps {
  subscriptions: Subscriptions;
  verifier: CallbackVerifier;
  service: ReturnAddressService;
}

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

/** name, arguments, cursor, maxAgeMs; an unknown name is the draft's NotFound (data.kind "event"). */
function readKey(params: Record<string, unknown>): Subscription {
  try {
    return readSubscription(params);
  } catch (err) {
    if (err instanceof EventsError && err.code === NOT_FOUND) throw new EventsError(WEBHOOK_NOT_FOUND, err.message, { kind: 'event' });
    throw err;
  }
}

function readDelivery(params: Record<string, unknown>, withSecret: boolean): { url: string; secret: string } {
  const d = params.delivery;
  if (typeof d !== 'object' || d === null || Array.isArray(d)) {
    throw invalid('params.delivery must be {"mode": "webhook", "url": "https://…", "secret": "whsec_…"}.');
  }
  const o = d as Record<string, unknown>;
  if (withSecret && o.mode !== undefined && o.mode !== 'webhook') {
    const value = typeof o.mode === 'string' ? o.mode.slice(0, 40) : JSON.stringify(o.mode)?.slice(0, 40);
    throw new EventsError(
      WEBHOOK_UNSUPPORTED,
      `Unsupported: params.delivery.mode ${value} is not offered by events/subscribe, which is webhook delivery only (poll is events/poll, push is events/stream).`,
      { feature: 'deliveryMode', value },
    );
  }
  if (typeof o.url !== 'string') throw invalid('params.delivery.url must be the https URL to POST occurrences to.');
  if (!withSecret) return { url: o.url, secret: '' };
  if (typeof o.secret !== 'string') {
    throw invalid('params.delivery.secret is required: whsec_ followed by the base64 of 24-64 random bytes, which your receiver verifies with.');
  }
  try {
    checkSecret(o.secret);
  } catch {
    throw invalid('params.delivery.secret must be whsec_ followed by the base64 of 24-64 random bytes (e.g. whsec_ + openssl rand -base64 32).');
  }
  return { url: o.url, secret: o.secret };
}

/**
 * The TTL grant in seconds, from the suggestion: absent is the default, null is no expiry (we keep
 * subscriptions in the database, so we can honour it), a number is clamped into the bounds (the
 * draft has no rejection path for TTL values); only a non-number is invalid.
 */
function grantSeconds(ttlMs: unknown): number | null {
  if (ttlMs === undefined) return DEFAULT_TTL_MS / 1000;
  if (ttlMs === null) return null;
  if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs < 0) {
    throw invalid('params.ttlMs must be a number of milliseconds (clamped to 60 s - 366 days), null for no expiry, or left out for 24 h.');
  }
  return Math.min(MAX_TTL_SECONDS, Math.max(MIN_TTL_SECONDS, Math.floor(ttlMs / 1000)));
}

/** An ApiError of Subscriptions in the extension's terms, naming the MCP params. */
function toEventsError(err: unknown, max: number): unknown {
  if (!(err instanceof ApiError)) return err;
  const message = err.message.replace("body field 'url'", 'params.delivery.url').replace("body field 'secret'", 'params.delivery.secret');
  if (err.code === 'too_many_subscriptions') return exhausted(max);
  if (err.status < 500) return new EventsError(INVALID_PARAMS, `Invalid params: ${message}`);
  return err;
}

const exhausted = (max: number) =>
  new EventsError(
    WEBHOOK_RESOURCE_EXHAUSTED,
    `ResourceExhausted: this address already has ${max} subscriptions (MAX_SUBSCRIPTIONS_PER_ADDRESS); events/unsubscribe one first.`,
    { limit: 'subscriptions', max },
  );

/** The last failure of a subscription as the draft's category; null after a success. */
export function lastErrorCategory(r: SubscriptionRecord): CallbackFailure | null {
  if (r.lastError === null) return null;
  if (r.lastStatus !== null) return r.lastStatus >= 300 && r.lastStatus < 400 ? 'http_4xx' : statusFailure(r.lastStatus);
  if (/^no answer within/.test(r.lastError)) return 'timeout';
  return failureOf(r.lastError, false);
}

function deliveryStatus(r: SubscriptionRecord): Record<string, unknown> {
  return {
    active: r.pausedAt === null,
    lastDeliveryAt: r.lastSuccessAt === null ? null : new Date(r.lastSuccessAt).toISOString(),
    lastError: lastErrorCategory(r),
  };
}

/** events/subscribe: creates the subscription after the handshake, or refreshes it (same key). */
export async function subscribeEvents(deps: WebhookDeps, address: AddressRecord, params: Record<string, unknown>): Promise<Record<string, unknown>> {
  const { subscriptions, verifier } = deps;
  const sub = readKey(params);
  const args = (params.arguments ?? {}) as Record<string, unknown>;
  if (args.state !== undefined) throw invalid("argument 'state' is not offered for webhook delivery: it sends the events default reads list.");
  const delivery = readDelivery(params, true);
  const ttl = grantSeconds(params.ttlMs);
  const max = subscriptions.config.maxPerAddress;
  let url: string;
  try {
    url = await subscriptions.checkUrl(delivery.url);
  } catch (err) {
    throw toEventsError(err, max);
  }
  // A per-ingress type is the catch-all with one condition more, stored with the subscription's filter.
  const ingress = EVENT_TYPES.get(sub.name);
  let match = args.match as readonly string[] | Readonly<Record<string, unknown>> | undefined;
  if (ingress !== undefined) {
    match = Array.isArray(match) ? [...(match as string[]), `trust.ingress=${ingress}`] : { ...(match ?? {}), 'trust.ingress': ingress };
  }
  const id = subscriptionId(address.id, sub.name, params.arguments, delivery.url);
  const rows = await subscriptions.subscriptions.listSubscriptions(address.id);
  const found = rows.find((r) => r.id === id);
  // One whose TTL ran out (not yet swept) has lapsed: it starts again from the client's cursor.
  const existing = found !== undefined && (found.expiresAt === null || found.expiresAt > Date.now()) ? found : undefined;
  let start = { after: 0, truncated: false };
  if (existing === undefined) {
    // The limit before the handshake: a subscription that cannot be stored sends no POST.
    if (found === undefined && rows.length >= max) throw exhausted(max);
    // Proof of intent: a stored MCP subscription of this address to the URL, a handshake here, or one now.
    const proven = rows.some((r) => r.id.startsWith(MCP_SUBSCRIPTION_PREFIX) && r.url === url) || verifier.isVerified(address.id, url);
    if (!proven) await verifier.verify({ addressId: address.id, subscriptionId: id, url, secret: delivery.secret });
    start = await startOf(deps.service, address, sub.cursor, sub.maxAgeMs, Date.now(), true);
  }
  let view: Awaited<ReturnType<Subscriptions['create']>>;
  try {
    view = await subscriptions.create(address, {
      id,
      url: delivery.url,
      secret: delivery.secret,
      ...(args.type === undefined ? {} : { type: args.type as string | string[] }),
      ...(match === undefined ? {} : { match }),
      ...(ttl === null ? {} : { ttl_seconds: ttl }),
      // A live subscription keeps its position whatever cursor the refresh carries (the draft's
      // no-op: the client's cursor is at or behind it); a new one starts after the cursor.
      ...(existing === undefined ? { after: start.after } : {}),
    });
  } catch (err) {
    throw toEventsError(err, max);
  }
  // A refresh reactivates a paused delivery: the failed event is tried again at once.
  if (existing?.pausedAt != null) await subscriptions.resume(address, id);
  const r = view.record;
  return {
    resultType: 'complete',
    id: r.id,
    refreshBefore: r.expiresAt === null ? null : new Date(r.expiresAt).toISOString(),
    cursor: String(view.cursor),
    truncated: start.truncated,
    ...(existing === undefined ? {} : { deliveryStatus: deliveryStatus(existing) }),
    _meta: { header: MCP_SUBSCRIPTION_HEADER, consumer: `push:${r.id}` },
  };
}

/** events/unsubscribe: by the key that made it (name, arguments, delivery.url); the id is not accepted. */
export async function unsubscribeEvents(deps: WebhookDeps, address: AddressRecord, params: Record<string, unknown>): Promise<Record<string, unknown>> {
  if (params.id !== undefined) {
    throw invalid('params.id is not accepted: events/unsubscribe takes the name, arguments and delivery.url the subscription was made with.');
  }
  const sub = readKey(params);
  const id = subscriptionId(address.id, sub.name, params.arguments, readDelivery(params, false).url);
  const found = await deps.subscriptions.subscriptions.getSubscription(address.id, id);
  if (found === null || !found.id.startsWith(MCP_SUBSCRIPTION_PREFIX)) {
    throw new EventsError(
      WEBHOOK_NOT_FOUND,
      'NotFound: no subscription of this address matches name, arguments and delivery.url (expired, or already removed).',
      {
        kind: 'subscription',
      },
    );
  }
  try {
    await deps.subscriptions.remove(address, id);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      throw new EventsError(WEBHOOK_NOT_FOUND, 'NotFound: no subscription of this address matches name, arguments and delivery.url (already removed).', {
        kind: 'subscription',
      });
    }
    throw err;
  }
  return { resultType: 'complete' };
}
