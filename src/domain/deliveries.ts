// Deliveries (design.md, "Delivery and idempotency", "The queue"): one event appended to an address's
// queue from any way in, after the checks that refuse it precisely (expired, too large for the event
// or the address, over the delivery rate), judged by the sender policy, and counted by the observer.
// A part of ReturnAddressService, which every way in speaks to.
import { blobBytes } from '../blobs/event-blob.js';
import { newEventId } from './credentials.js';
import { inboxDedupeKey } from './dedupe-key.js';
import { ApiError, INBOX_NOT_FOUND } from './errors.js';
import type { AddressRecord, Delivery, EventInput, NewEvent } from './model.js';
import type { Store, WakeupHub } from './ports.js';
import { storedBytes } from './queue-quota.js';
import { refusedTrust, type SenderScreen } from './sender-screen.js';
import type { DeliveryOutcome, DeliveryRoute, ServiceObserver } from './service-observer.js';
import { INBOX_TRUST_JSON } from './trust.js';

export interface DeliveryOptions {
  maxEventsPerAddress: number;
  /** Bytes of stored data and metadata per address (MAX_BYTES_PER_ADDRESS), pruned like the event count. */
  maxBytesPerAddress: number;
  /** An event's stored JSON (data and metadata) is at most this (MAX_EVENT_BYTES, at most MAX_PAGE_BYTES): every page budget is at least this. */
  maxEventBytes: number;
  /** DELIVERY_RATE_LIMIT per DELIVERY_RATE_WINDOW_SECONDS, per address, over every way in. */
  deliveryRateLimit?: number | undefined;
  deliveryRateWindowSeconds?: number;
}

/** Who is told and asked about a delivery: set on the service after it is built (metrics, sender policies). */
export interface DeliveryWatch {
  readonly observer: ServiceObserver;
  readonly screen: SenderScreen;
}

export const DEFAULT_EVENT_TYPE = 'message.received';
export const DEFAULT_EVENT_SOURCE = 'https';
/** How long a client told `queue_full` should wait before retrying: long enough for a reader to ack. */
const QUEUE_FULL_RETRY_AFTER_SECONDS = 30;

/** The stored key: an inbox sender's provider-shaped key is kept apart from the providers' (dedupe-key.ts). */
const dedupeKeyOf = (key: string | undefined, route: DeliveryRoute): string | null =>
  key === undefined ? null : route === 'inbox' ? inboxDedupeKey(key) : key;

export class Deliveries {
  constructor(
    private readonly store: Store,
    private readonly hub: WakeupHub,
    private readonly opts: DeliveryOptions,
    private readonly watch: DeliveryWatch,
    private readonly now: () => number,
  ) {}

  /** POST /api/v1/inbox/{id}/{secret} once `openInbox` has resolved the address. */
  async deliverToInbox(address: AddressRecord, input: EventInput, idempotencyKey: string | undefined): Promise<Delivery> {
    return this.deliver(address, input, idempotencyKey, 'https', 'inbox');
  }

  /**
   * Appends one event to an address's queue (any source: HTTP, email). Resolves once the event is
   * durably committed; a repeat of an idempotency key resolves to the original event. `trust` is
   * what the way in itself checked (domain/trust.ts), never taken from the input: an inbox
   * delivery's unless the caller proved more.
   */
  async deliver(
    address: AddressRecord,
    input: EventInput,
    idempotencyKey: string | undefined,
    defaultSource: string,
    route: DeliveryRoute = 'other',
    trust: string = INBOX_TRUST_JSON,
  ): Promise<Delivery> {
    try {
      const delivery = await this.deliverOnce(address, input, idempotencyKey, defaultSource, route, trust);
      this.watch.observer.delivery(route, delivery.duplicate ? 'duplicate' : 'created');
      return delivery;
    } catch (err) {
      this.watch.observer.delivery(route, refusalOf(err));
      throw err;
    }
  }

  private async deliverOnce(
    address: AddressRecord,
    input: EventInput,
    idempotencyKey: string | undefined,
    defaultSource: string,
    route: DeliveryRoute,
    trust: string,
  ): Promise<Delivery> {
    if (idempotencyKey !== undefined && input.dedupe_key !== undefined && idempotencyKey !== input.dedupe_key) {
      throw new ApiError('idempotency_key_mismatch', 'The Idempotency-Key header and the body dedupe_key differ; send one, or the same value in both.');
    }
    const createdAt = this.now();
    if (createdAt >= address.expiresAt) {
      throw new ApiError('address_expired', `This address expired at ${new Date(address.expiresAt).toISOString()} and accepts no more deliveries.`);
    }
    const event: NewEvent = {
      id: input.id ?? newEventId(createdAt),
      addressId: address.id,
      type: input.type ?? DEFAULT_EVENT_TYPE,
      source: input.source ?? defaultSource,
      data: input.dataJson ?? JSON.stringify(input.data ?? null),
      metadata: input.metadata === undefined ? null : JSON.stringify(input.metadata),
      dedupeKey: dedupeKeyOf(idempotencyKey ?? input.dedupe_key, route),
      trust,
      createdAt,
      ...(input.blobs !== undefined && input.blobs.length > 0 ? { blobs: input.blobs } : {}),
    };
    // An event that could never fit, even in an empty queue, is refused as too large, not as full.
    // UTF-8 takes at most 3 bytes per UTF-16 unit, so only an event near a limit is measured.
    const units = event.data.length + (event.metadata?.length ?? 0);
    const near = units * 3 > Math.min(this.opts.maxEventBytes, this.opts.maxBytesPerAddress);
    const jsonBytes = near ? storedBytes(event.data, event.metadata) : 0;
    // Bounded events are what lets every read path keep its byte budget (design.md, "Bounded work").
    if (jsonBytes > this.opts.maxEventBytes) {
      throw new ApiError(
        'payload_too_large',
        `This event's JSON would take ${jsonBytes} bytes stored, more than MAX_EVENT_BYTES (${this.opts.maxEventBytes}): ` +
          'send less (for a captured request: fewer or shorter headers, query parameters or form fields; large bodies are stored beside the event by themselves).',
      );
    }
    const size = jsonBytes + blobBytes(event.blobs);
    if (size > this.opts.maxBytesPerAddress) {
      throw new ApiError(
        'payload_too_large',
        `This event would take ${size} bytes stored, more than one address holds (MAX_BYTES_PER_ADDRESS = ${this.opts.maxBytesPerAddress}): send less.`,
      );
    }
    const limit = this.opts.deliveryRateLimit;
    if (limit !== undefined) {
      // Shared by every instance on one database (the store counts in its rate_windows table); a
      // refused delivery does not count.
      const decision = await this.store.countRate({
        key: `deliver:${address.id}`,
        limit,
        windowMs: (this.opts.deliveryRateWindowSeconds ?? 60) * 1000,
        now: createdAt,
      });
      if (!decision.allowed) {
        throw new ApiError(
          'rate_limited',
          `Too many deliveries to this address: at most ${limit} per ${this.opts.deliveryRateWindowSeconds ?? 60} s ` +
            `(DELIVERY_RATE_LIMIT); retry in ${decision.retryAfterSeconds} s.`,
          { 'retry-after': String(decision.retryAfterSeconds) },
        );
      }
    }
    // A delivery that fails the sender policy is stored all the same, quarantined (design.md,
    // "Sender policy and quarantine"): never refused, so a sender cannot learn the policy by probing.
    const quarantineReason = input.sender === undefined ? null : await this.watch.screen.check(address.id, input.sender);
    if (quarantineReason !== null) {
      event.quarantinedAt = createdAt;
      event.trust = refusedTrust(event.trust, quarantineReason);
    }
    const started = performance.now();
    const result = await this.store.appendEvent(event, {
      maxEventsPerAddress: this.opts.maxEventsPerAddress,
      maxBytesPerAddress: this.opts.maxBytesPerAddress,
    });
    this.watch.observer.commit((performance.now() - started) / 1000);
    switch (result.kind) {
      case 'created':
        this.hub.notify(address.id);
        return quarantineReason === null ? { event: result.event, duplicate: false } : { event: result.event, duplicate: false, quarantineReason };
      case 'duplicate':
        return { event: result.event, duplicate: true };
      case 'queue_full':
        throw new ApiError(
          'queue_full',
          `This address is full: its unacknowledged events reach MAX_EVENTS_PER_ADDRESS (${this.opts.maxEventsPerAddress}) or ` +
            `MAX_BYTES_PER_ADDRESS (${this.opts.maxBytesPerAddress} bytes); acknowledge some before delivering more.`,
          { 'retry-after': String(QUEUE_FULL_RETRY_AFTER_SECONDS) },
        );
      case 'address_gone':
        throw new ApiError('not_found', INBOX_NOT_FOUND);
    }
  }
}

/** The observer's outcome for a refused delivery. */
function refusalOf(err: unknown): DeliveryOutcome {
  if (!(err instanceof ApiError)) return 'error';
  switch (err.code) {
    case 'queue_full':
      return 'queue_full';
    case 'address_expired':
      return 'expired';
    case 'payload_too_large':
      return 'too_large';
    case 'rate_limited':
      return 'rate_limited';
    case 'not_found':
      return 'not_found';
    default:
      return 'invalid';
  }
}
