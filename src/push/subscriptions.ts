// Webhook subscriptions' rules (design.md, "Push subscriptions"): create (or refresh, the same id
// again), list, show, delete, resume. Each subscription's position is the named consumer
// push:<id> (src/consumers), so GET …/consumers shows how far it got and a reader can take over
// with consumer=push:<id>. The worker (push-worker.ts) is told of every change so it acts at once.
import { randomBytes } from 'node:crypto';
import type { PushConfig } from '../config.js';
import type { Consumers } from '../consumers/consumers.js';
import { ApiError, notFound } from '../domain/errors.js';
import { type EventFilter, type FilterInput, parseEventFilter } from '../domain/event-filter.js';
import type { AddressRecord } from '../domain/model.js';
import { checkSecret, generateSecret, type SecretSeal } from './subscription-secret.js';
import type { PushStore, SubscriptionRecord, SubscriptionStore } from './subscription-store.js';
import { checkTargetAddresses, checkTargetShape, type Resolve, systemResolve, TargetRefused } from './target-guard.js';

export const SUBSCRIPTION_ID_PATTERN = '^(?!\\.+$)[a-z0-9_.-]{1,58}$';
const SUBSCRIPTION_ID_RE = new RegExp(SUBSCRIPTION_ID_PATTERN);
export const MAX_URL_CHARS = 2048;
export const MIN_TTL_SECONDS = 60;
export const MAX_TTL_SECONDS = 366 * 24 * 3600;

/** The consumer that holds a subscription's position. */
export const pushConsumerName = (id: string): string => `push:${id}`;

export interface SubscriptionInput {
  /** Given by a caller that wants a deterministic id (MCP events/subscribe); generated otherwise. */
  id?: string;
  url: string;
  secret?: string;
  type?: string | readonly string[];
  match?: readonly string[] | Readonly<Record<string, unknown>>;
  ttl_seconds?: number;
  /** The position to start after; default 0 for a new subscription (every event still queued), kept on a refresh. */
  after?: number;
}

export interface SubscriptionView {
  record: SubscriptionRecord;
  /** The consumer's position: the last sequence delivered (or passed over by the filter). */
  cursor: number;
  /** Only on the response that created it without a given secret, or rotated it. */
  secret?: string;
}

/** The stored filter's input form, parsed again when the worker loads a subscription. */
export function storedFilter(s: SubscriptionRecord): EventFilter {
  return parseEventFilter(JSON.parse(s.filter) as FilterInput, 'stored filter');
}

export class Subscriptions {
  /** Told after a create, resume or delete: the worker takes the subscription up (or drops it) now. */
  onChange: (addressId: string) => void = () => {};

  constructor(
    private readonly store: PushStore,
    /** The service's one Consumers (compose.ts): a subscription's position is the named consumer push:<id>. */
    private readonly consumers: Consumers,
    readonly subscriptions: SubscriptionStore,
    readonly config: PushConfig,
    readonly seal: SecretSeal,
    readonly resolve: Resolve = systemResolve,
    private readonly now: () => number = Date.now,
  ) {}

  /** Creates a subscription, or refreshes the one with the same id (url, secret, filter, TTL). */
  async create(address: AddressRecord, input: SubscriptionInput): Promise<SubscriptionView & { created: boolean }> {
    const id = input.id ?? `sub_${randomBytes(10).toString('hex')}`;
    if (!SUBSCRIPTION_ID_RE.test(id)) {
      throw new ApiError('invalid_request', "Invalid body field 'id': 1-58 characters of a-z, 0-9, _ . -, not only dots.");
    }
    const url = await this.checkUrl(input.url);
    const filterInput: FilterInput = { type: input.type, match: input.match };
    parseEventFilter(filterInput, 'body field');
    const shown = input.secret === undefined ? generateSecret() : checkSecret(input.secret);
    const now = this.now();
    const ttl = input.ttl_seconds;
    if (ttl !== undefined && (!Number.isInteger(ttl) || ttl < MIN_TTL_SECONDS || ttl > MAX_TTL_SECONDS)) {
      throw new ApiError(
        'invalid_request',
        `Invalid body field 'ttl_seconds': a whole number of seconds, ${MIN_TTL_SECONDS}-${MAX_TTL_SECONDS}; leave it out for no expiry.`,
      );
    }
    const record: SubscriptionRecord = {
      addressId: address.id,
      id,
      url,
      secret: this.seal.seal(address.id, id, shown),
      filter: JSON.stringify({ type: input.type ?? [], match: input.match ?? [] }),
      createdAt: now,
      expiresAt: ttl === undefined ? null : now + ttl * 1000,
      pausedAt: null,
      pausedReason: null,
      attempts: 0,
      nextAttemptAt: null,
      lastAttemptAt: null,
      lastStatus: null,
      lastError: null,
      lastSuccessAt: null,
      previousSecret: null,
      secretRotatedAt: null,
      deliveredEpoch: null,
    };
    const old = await this.subscriptions.getSubscription(address.id, id);
    const existed = old !== null;
    if (old) Object.assign(record, this.rotation(old, shown, now));
    // The position first: a new subscription must never start before its consumer exists.
    const cursor = await this.consumers.start(address, pushConsumerName(id), input.after ?? (existed ? undefined : 0));
    const result = await this.subscriptions.saveSubscription(record, this.config.maxPerAddress);
    if (result === 'address_gone') throw notFound('Address');
    if (result === 'too_many') {
      if (!existed) await this.store.consumers.remove(address.id, pushConsumerName(id));
      throw new ApiError(
        'too_many_subscriptions',
        `This address already has ${this.config.maxPerAddress} subscriptions (MAX_SUBSCRIPTIONS_PER_ADDRESS): delete one (DELETE /api/v1/addresses/{id}/subscriptions/{subscriptionId}) first.`,
      );
    }
    this.onChange(address.id);
    const stored = (await this.subscriptions.getSubscription(address.id, id)) ?? record;
    return { record: stored, cursor, secret: input.secret === undefined ? shown : undefined, created: result === 'created' };
  }

  /**
   * A refresh with a different secret keeps the replaced one (sealed as it was) to sign beside the
   * new one for PUSH_ROTATION_GRACE_MS from now; the same secret again keeps a rotation under way.
   */
  private rotation(old: SubscriptionRecord, secret: string, now: number): Pick<SubscriptionRecord, 'previousSecret' | 'secretRotatedAt'> {
    const before = this.seal.open(old.addressId, old.id, old.secret);
    if (before === secret) return { previousSecret: old.previousSecret, secretRotatedAt: old.secretRotatedAt };
    if (before === null || this.config.rotationGraceMs === 0) return { previousSecret: null, secretRotatedAt: null };
    return { previousSecret: old.secret, secretRotatedAt: now };
  }

  async list(address: AddressRecord): Promise<SubscriptionView[]> {
    const [rows, positions] = await Promise.all([this.subscriptions.listSubscriptions(address.id), this.store.consumers.list(address.id)]);
    const cursorOf = new Map(positions.map((p) => [p.name, p.cursor]));
    return rows.map((record) => ({ record, cursor: cursorOf.get(pushConsumerName(record.id)) ?? 0 }));
  }

  async get(address: AddressRecord, id: string): Promise<SubscriptionView> {
    const record = await this.subscriptions.getSubscription(address.id, id);
    if (!record) throw notFound('Subscription');
    return { record, cursor: (await this.store.consumers.position(address.id, pushConsumerName(id))) ?? 0 };
  }

  /** Deletes the subscription; its consumer push:<id> stays (a reader may take over from it) until deleted itself. */
  async remove(address: AddressRecord, id: string): Promise<void> {
    if (!(await this.subscriptions.removeSubscription(address.id, id))) throw notFound('Subscription');
    this.onChange(address.id);
  }

  /** Clears a pause: the event that failed is tried again at once, then the rest in order. */
  async resume(address: AddressRecord, id: string): Promise<SubscriptionView> {
    if (!(await this.subscriptions.resumeSubscription(address.id, id))) throw notFound('Subscription');
    this.onChange(address.id);
    return this.get(address, id);
  }

  /** The URL normalised, or 400 naming `url`: https and public unless PUSH_ALLOW_PRIVATE (MCP events/subscribe checks it before its handshake). */
  async checkUrl(raw: string): Promise<string> {
    let url: URL;
    try {
      if (raw.length > MAX_URL_CHARS) throw new TargetRefused(`must be at most ${MAX_URL_CHARS} characters`);
      url = new URL(raw);
      checkTargetShape(url, this.config.allowPrivate);
      await checkTargetAddresses(url, this.config.allowPrivate, this.resolve);
    } catch (err) {
      const why = err instanceof TargetRefused ? err.message : 'must be an absolute https URL (https://example.com/hooks)';
      throw new ApiError('invalid_request', `Invalid body field 'url': ${why}.`);
    }
    return url.toString();
  }
}
