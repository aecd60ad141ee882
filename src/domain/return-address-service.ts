// The queue's rules, shared by every way in: HTTP routes, the SMTP listener and MCP tools.
// No HTTP and no SQL here: it speaks to a Store and a WakeupHub and throws ApiErrors.

import { type BlobName, blobBytes, type StoredBlob } from '../blobs/event-blob.js';
import { bearerToken, WRONG_TOKEN } from './bearer-token.js';
import { ADDRESS_ID_RE, EVENT_ID_RE, hashSecret, newAddressId, newEventId, newInboxSecret, newReadToken, newSlug, secretMatches } from './credentials.js';
import { inboxDedupeKey } from './dedupe-key.js';
import { ApiError, INBOX_NOT_FOUND, notFound, unauthorized } from './errors.js';
import type { EventFilter } from './event-filter.js';
import { EventReads } from './event-reads.js';
import { EventStream, type StreamSink } from './event-stream.js';
import { LongPoll, type PollCallback } from './long-poll.js';
import type { AddressRecord, Delivery, EventInput, EventRecord, ListQuery, NewEvent, Page } from './model.js';
import type { Store, WakeupHub } from './ports.js';
import { storedBytes } from './queue-quota.js';
import { NO_SCREEN, refusedTrust, type SenderScreen } from './sender-screen.js';
import { type DeliveryOutcome, type DeliveryRoute, NO_OBSERVER, type ServiceObserver } from './service-observer.js';
import { newSigningKeys } from './signing-keys.js';
import { INBOX_TRUST_JSON } from './trust.js';

export interface ServiceOptions {
  defaultTtlSeconds: number;
  expiredGraceSeconds: number;
  createRateLimit: number;
  createRateWindowSeconds: number;
  maxEventsPerAddress: number;
  /** Bytes of stored data and metadata per address (MAX_BYTES_PER_ADDRESS), pruned like the event count. */
  maxBytesPerAddress: number;
  /** A page holds events up to this many bytes of stored JSON: MAX_PAGE_BYTES. */
  maxPageBytes: number;
  /** An event's stored JSON (data and metadata) is at most this (MAX_EVENT_BYTES, at most MAX_PAGE_BYTES): every page budget is at least this. */
  maxEventBytes: number;
  /** MAX_TTL_SECONDS: a create asking for a longer expires_in_seconds is refused naming the cap. */
  maxTtlSeconds?: number | undefined;
  /** DELIVERY_RATE_LIMIT per DELIVERY_RATE_WINDOW_SECONDS, per address, over every way in. */
  deliveryRateLimit?: number | undefined;
  deliveryRateWindowSeconds?: number;
  /** RETAIN_ACKED_SECONDS: acknowledged events are deleted this long after their ack. */
  retainAckedSeconds?: number | undefined;
}

export interface CreateAddressInput {
  name?: string;
  task_id?: string;
  expires_in_seconds?: number;
}

export interface CreatedAddress {
  address: AddressRecord;
  readToken: string;
  inboxSecret: string;
}

export const DEFAULT_EVENT_TYPE = 'message.received';
export const DEFAULT_EVENT_SOURCE = 'https';
export const DEFAULT_ADDRESS_NAME = 'untitled';
/** Stored JSON bytes a stream reads at once (raised to MAX_EVENT_BYTES when that is larger): what a blocked stream may hold. */
export const STREAM_PAGE_BYTES = 1024 * 1024;
/** How long a client told `queue_full` should wait before retrying: long enough for a reader to ack. */
const QUEUE_FULL_RETRY_AFTER_SECONDS = 30;

/** The stored key: an inbox sender's provider-shaped key is kept apart from the providers' (dedupe-key.ts). */
const dedupeKeyOf = (key: string | undefined, route: DeliveryRoute): string | null =>
  key === undefined ? null : route === 'inbox' ? inboxDedupeKey(key) : key;

export class ReturnAddressService {
  /** Every reader's reads, shared by the readers asking the same in one turn (event-reads.ts). */
  private readonly reads: EventReads;
  /** Told about deliveries, commits, signatures and approvals (the metrics set it; a no-op otherwise). */
  observer: ServiceObserver = NO_OBSERVER;
  /** Judges email and capture deliveries against the address's sender policy (src/sender-policy sets it; none by default). */
  screen: SenderScreen = NO_SCREEN;

  constructor(
    private readonly store: Store,
    private readonly hub: WakeupHub,
    private readonly opts: ServiceOptions,
    private readonly now: () => number = Date.now,
  ) {
    this.reads = new EventReads(store);
  }

  async createAddress(input: CreateAddressInput, clientKey: string): Promise<CreatedAddress> {
    const createdAt = this.now();
    const cap = this.opts.maxTtlSeconds;
    if (cap !== undefined && input.expires_in_seconds !== undefined && input.expires_in_seconds > cap) {
      throw new ApiError(
        'invalid_request',
        `expires_in_seconds must be at most ${cap} on this instance (MAX_TTL_SECONDS = ${cap}); ` +
          `got ${input.expires_in_seconds}. Ask for ${cap} or less, or omit it for the default of ${this.opts.defaultTtlSeconds} s.`,
      );
    }
    const ttl = input.expires_in_seconds ?? this.opts.defaultTtlSeconds;
    const readToken = newReadToken();
    const inboxSecret = newInboxSecret();
    const id = newAddressId();
    const address: AddressRecord = {
      id,
      slug: newSlug(),
      name: input.name ?? DEFAULT_ADDRESS_NAME,
      taskId: input.task_id ?? null,
      readTokenHash: hashSecret(readToken),
      inboxSecretHash: hashSecret(inboxSecret),
      signingKeys: newSigningKeys(id, readToken, inboxSecret),
      createdAt,
      expiresAt: createdAt + ttl * 1000,
      // The creating client's IP, plain (the operator's `admin list` shows it to act on abuse); it
      // goes with the address.
      createdIp: clientKey,
    };
    const decision = await this.store.createAddress(address, {
      key: `create:${clientKey}`,
      limit: this.opts.createRateLimit,
      windowMs: this.opts.createRateWindowSeconds * 1000,
      now: createdAt,
    });
    if (!decision.allowed) {
      throw new ApiError('rate_limited', `Too many addresses created from this client; retry in ${decision.retryAfterSeconds} s.`, {
        'retry-after': String(decision.retryAfterSeconds),
      });
    }
    return { address, readToken, inboxSecret };
  }

  /** The address if it exists and is not past its grace period (then it is as good as swept). */
  async findAddress(addressId: string): Promise<AddressRecord | null> {
    if (!ADDRESS_ID_RE.test(addressId)) return null;
    return this.usable(await this.store.getAddress(addressId));
  }

  /** The address by the local part of its email (slug), for the SMTP listener. */
  async findAddressBySlug(slug: string): Promise<AddressRecord | null> {
    return this.usable(await this.store.getAddressBySlug(slug));
  }

  /**
   * Checks a bearer credential in the order of design.md, "Errors": a well-formed bearer (else 401),
   * then an existing address (else 404), then the token of that address (else 401).
   */
  async authenticate(addressId: string, authorization: string | undefined): Promise<AddressRecord> {
    const token = bearerToken(authorization);
    return this.checkReadToken(await this.findAddress(addressId), token);
  }

  /**
   * `authenticate` without waiting, when the store holds the address in memory (a queue being read
   * is): the address, or undefined when only `authenticate` can tell. Throws what it would throw.
   * Reading a page skips two promise hops this way (bench/README.md, "The same-turn authentication").
   */
  authenticateNow(addressId: string, authorization: string | undefined): AddressRecord | undefined {
    const token = bearerToken(authorization);
    if (!ADDRESS_ID_RE.test(addressId)) throw notFound('Address');
    const held = this.store.heldAddress?.(addressId);
    return held === undefined ? undefined : this.checkReadToken(this.usable(held), token);
  }

  /** `address` is a usable one (from findAddress or usable), or null: 404. */
  private checkReadToken(address: AddressRecord | null, token: string): AddressRecord {
    if (!address) throw notFound('Address');
    if (!secretMatches(token, address.readTokenHash)) throw unauthorized(WRONG_TOKEN);
    return address;
  }

  async deleteAddress(address: AddressRecord): Promise<void> {
    const existed = await this.store.deleteAddress(address.id);
    if (!existed) throw notFound('Address');
    this.changed(address.id);
  }

  /**
   * The inbox URL's credential (POST /api/v1/inbox/{id}/{secret}): the address whose inbox secret this is, else 404. Checked before the
   * body or any header is looked at, so someone without the secret learns nothing from validation
   * and cannot make the service parse a body.
   */
  async openInbox(addressId: string, secret: string): Promise<AddressRecord> {
    return this.checkInboxSecret(await this.findAddress(addressId), secret);
  }

  /** `openInbox` without waiting when the store holds the address in memory; undefined when only `openInbox` can tell. */
  openInboxNow(addressId: string, secret: string): AddressRecord | undefined {
    if (!ADDRESS_ID_RE.test(addressId)) throw new ApiError('not_found', INBOX_NOT_FOUND);
    const held = this.store.heldAddress?.(addressId);
    return held === undefined ? undefined : this.checkInboxSecret(this.usable(held), secret);
  }

  private checkInboxSecret(address: AddressRecord | null, secret: string): AddressRecord {
    // One answer for an unknown address and a wrong secret, so neither can be probed.
    if (!address || !secretMatches(secret, address.inboxSecretHash)) throw new ApiError('not_found', INBOX_NOT_FOUND);
    return address;
  }

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
      this.observer.delivery(route, delivery.duplicate ? 'duplicate' : 'created');
      return delivery;
    } catch (err) {
      this.observer.delivery(route, refusalOf(err));
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
    const quarantineReason = input.sender === undefined ? null : await this.screen.check(address.id, input.sender);
    if (quarantineReason !== null) {
      event.quarantinedAt = createdAt;
      event.trust = refusedTrust(event.trust, quarantineReason);
    }
    const started = performance.now();
    const result = await this.store.appendEvent(event, {
      maxEventsPerAddress: this.opts.maxEventsPerAddress,
      maxBytesPerAddress: this.opts.maxBytesPerAddress,
    });
    this.observer.commit((performance.now() - started) / 1000);
    switch (result.kind) {
      case 'created':
        this.changed(address.id);
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

  /**
   * GET /api/v1/addresses/{id}/events. With `wait` > 0 and nothing after the cursor, holds until an event arrives, the
   * address is deleted (404), the wait elapses, the client leaves (`signal`) or the service shuts
   * down (the last three: an empty page).
   */
  listEvents(address: AddressRecord, q: ListQuery, signal?: AbortSignal): Promise<Page> {
    return new Promise((resolve, reject) => {
      const onAbort = () => poll.cancel();
      const poll = this.pollEvents(address, q, (err, page) => {
        signal?.removeEventListener('abort', onAbort);
        if (page) resolve(page);
        else reject(err);
      });
      if (signal?.aborted) poll.cancel();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * listEvents with a callback, for a caller that holds many reads at once (the HTTP route): a
   * waiting poll holds no promise (long-poll.ts). `cancel()` the result when the client leaves.
   */
  pollEvents(address: AddressRecord, q: ListQuery, callback: PollCallback): LongPoll {
    const deadline = q.wait > 0 ? this.now() + q.wait * 1000 : undefined;
    const poll = new LongPoll(
      this.hub,
      address.id,
      (cursor) => this.readPage(address.id, cursor, q.limit, q.maxBytes, q.filter),
      q.after,
      deadline,
      this.now,
      callback,
    );
    poll.start();
    return poll;
  }

  /**
   * A live stream of the queue after `after` (event-stream.ts): the sink gets every event in order,
   * a heartbeat after each idle `heartbeatMs`, and end() on deletion (not_found), store failure or
   * shutdown. Pages of at most STREAM_PAGE_BYTES, so a blocked stream holds little. `start()` it
   * (the sink may be called from inside start()), and `cancel()` it when the client leaves.
   */
  streamEvents(address: AddressRecord, after: number, heartbeatMs: number, sink: StreamSink, filter?: EventFilter): EventStream {
    return new EventStream(
      this.hub,
      address.id,
      (cursor) => this.readPage(address.id, cursor, 100, Math.max(STREAM_PAGE_BYTES, this.opts.maxEventBytes), filter),
      after,
      heartbeatMs,
      sink,
    );
  }

  /**
   * MCP wait_for_event: the first event after `after` that passes `filter`, evaluated by the store,
   * waiting up to `timeoutSeconds`. `nextCursor` is the last event examined (that event's sequence
   * or beyond it, past events that did not match), or how far the queue was scanned.
   */
  async waitForEvent(
    address: AddressRecord,
    after: number,
    timeoutSeconds: number,
    filter: EventFilter | undefined,
    signal?: AbortSignal,
  ): Promise<{ event: EventRecord | null; nextCursor: number }> {
    const deadline = this.now() + timeoutSeconds * 1000;
    let cursor = after;
    for (;;) {
      const wait = Math.max(0, deadline - this.now()) / 1000;
      const page = await this.listEvents(address, { after: cursor, limit: 1, wait, ...(filter ? { filter } : {}) }, signal);
      const event = page.events[0];
      if (event) return { event, nextCursor: page.nextCursor };
      cursor = page.nextCursor;
      // An empty page that is not a scan stopped at its bound means the wait ended (timeout, client gone, shutdown).
      if (!page.hasMore || this.now() >= deadline) return { event: null, nextCursor: cursor };
    }
  }

  /** Bytes stored beside an event of this address (design.md, "Bounded work"); 404 when there are none of that name. */
  async openBlob(address: AddressRecord, eventId: string, name: BlobName): Promise<StoredBlob> {
    if (!EVENT_ID_RE.test(eventId)) throw notFound('Event');
    const blob = await this.store.openBlob(address.id, eventId, name);
    if (!blob) throw notFound(name === 'raw' ? 'Raw bytes of this event' : 'Stored attachment of this event');
    return blob;
  }

  /** POST /api/v1/addresses/{id}/events/{eventId}/ack: idempotent; a second ack returns the first acknowledged_at. */
  async ackEvent(address: AddressRecord, eventId: string): Promise<EventRecord> {
    if (!EVENT_ID_RE.test(eventId)) throw notFound('Event');
    const event = await this.store.ackEvent(address.id, eventId, this.now());
    if (!event) throw notFound('Event');
    return event;
  }

  /**
   * POST …/events/{eventId}/release: a quarantined event becomes an ordinary one, read by default reads
   * again at its own sequence (design.md, "Sender policy and quarantine"). Idempotent; 409
   * not_quarantined for an event that never was quarantined.
   */
  async releaseEvent(address: AddressRecord, eventId: string): Promise<EventRecord> {
    if (!EVENT_ID_RE.test(eventId)) throw notFound('Event');
    const event = await this.store.releaseEvent(address.id, eventId, this.now());
    if (!event) throw notFound('Event');
    if (event.quarantinedAt == null) {
      throw new ApiError(
        'not_quarantined',
        `Event ${eventId} was never quarantined: there is nothing to release. Acknowledge it instead, if you are done with it.`,
      );
    }
    // Readers whose cursor is before it, and claimers, may now have an event to take.
    this.changed(address.id);
    return event;
  }

  /** Deletes addresses past expiresAt + grace, with their events; ends their waiting reads. */
  async sweepExpired(batchSize = 500): Promise<number> {
    const cutoff = this.now() - this.opts.expiredGraceSeconds * 1000;
    let total = 0;
    for (;;) {
      const ids = await this.store.deleteExpired(cutoff, batchSize);
      for (const id of ids) this.changed(id);
      total += ids.length;
      if (ids.length < batchSize) return total;
    }
  }

  /**
   * Retention by age (RETAIN_ACKED_SECONDS): deletes events acknowledged before now − retention, in
   * batches of `batchSize`, each its own short transaction. Between batches it pauses as long as the
   * batch took, so the deletion never takes more than half of the store's (and, on SQLite, the event
   * loop's) time from deliveries: a large backlog takes longer, deliveries keep their latency.
   * Returns how many events were deleted.
   */
  async sweepAcknowledged(batchSize = 200): Promise<number> {
    const retain = this.opts.retainAckedSeconds;
    if (retain === undefined) return 0;
    const cutoff = this.now() - retain * 1000;
    let total = 0;
    for (;;) {
      const started = performance.now();
      const deleted = await this.store.deleteAcknowledgedBefore(cutoff, batchSize);
      total += deleted;
      if (deleted < batchSize) break;
      await new Promise<void>((resolve) => setTimeout(resolve, Math.max(1, performance.now() - started)));
    }
    if (total > 0) await this.store.reclaimSpace();
    return total;
  }

  /** A page for a reader (event-reads.ts: shared with the readers asking the same in this turn, filters run in memory). */
  private readPage(addressId: string, after: number, limit: number, maxBytes = this.opts.maxPageBytes, filter?: EventFilter): Promise<Page> {
    // Never below MAX_EVENT_BYTES: then every event fits in a page, and no page needs an exception for a large first event.
    const budget = Math.max(this.opts.maxEventBytes, Math.min(maxBytes, this.opts.maxPageBytes));
    return this.reads.page(addressId, after, limit, budget, filter);
  }

  /** The address, unless it is past its grace period (then it is as good as swept). */
  private usable(a: AddressRecord | null): AddressRecord | null {
    return a && !this.isPastGrace(a) ? a : null;
  }

  private isPastGrace(a: AddressRecord): boolean {
    return this.now() >= a.expiresAt + this.opts.expiredGraceSeconds * 1000;
  }

  /** Another room appended to the address through the store (an approval's step, approvals/): wake its readers. */
  addressChanged(addressId: string): void {
    this.changed(addressId);
  }

  /**
   * Wakes this process's waiters on the address. With a store that notifies across instances the
   * notification arrives anyway; waking here too saves the round trip for local readers.
   */
  private changed(addressId: string): void {
    this.hub.notify(addressId);
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
