// The queue's rules, shared by every way in: HTTP routes, the SMTP listener and MCP tools.
// No HTTP and no SQL here: it speaks to a Store and a WakeupHub and throws ApiErrors. Its jobs are
// parts of their own, each over the same store and hub: the addresses and their credentials
// (addresses.ts), deliveries (deliveries.ts), a reader's reads and waits (queue-readers.ts), and the
// deletions on a timer (queue-sweeps.ts); this face keeps the one object every way in is given.
import type { BlobName, StoredBlob } from '../blobs/event-blob.js';
import { Addresses, type AddressOptions, type CreateAddressInput, type CreatedAddress } from './addresses.js';
import { Deliveries, type DeliveryOptions } from './deliveries.js';
import type { EventFilter } from './event-filter.js';
import type { EventStream, StreamSink } from './event-stream.js';
import type { LongPoll, PollCallback } from './long-poll.js';
import type { AddressRecord, Delivery, EventInput, EventRecord, ListQuery, Page } from './model.js';
import type { Store, WakeupHub } from './ports.js';
import { QueueReaders, type ReadOptions } from './queue-readers.js';
import { QueueSweeps, type SweepOptions } from './queue-sweeps.js';
import { NO_SCREEN, type SenderScreen } from './sender-screen.js';
import { type DeliveryRoute, NO_OBSERVER, type ServiceObserver } from './service-observer.js';
import { INBOX_TRUST_JSON } from './trust.js';

export type ServiceOptions = AddressOptions & DeliveryOptions & ReadOptions & SweepOptions;

export class ReturnAddressService {
  /** Told about deliveries, commits, signatures and approvals (the metrics set it; a no-op otherwise). */
  observer: ServiceObserver = NO_OBSERVER;
  /** Judges email and capture deliveries against the address's sender policy (src/sender-policy sets it; none by default). */
  screen: SenderScreen = NO_SCREEN;
  private readonly addresses: Addresses;
  private readonly deliveries: Deliveries;
  private readonly readers: QueueReaders;
  private readonly sweeps: QueueSweeps;

  constructor(
    store: Store,
    private readonly hub: WakeupHub,
    opts: ServiceOptions,
    now: () => number = Date.now,
  ) {
    this.addresses = new Addresses(store, hub, opts, now);
    // The service itself is the watch: observer and screen are set after it is built.
    this.deliveries = new Deliveries(store, hub, opts, this, now);
    this.readers = new QueueReaders(store, hub, opts, now);
    this.sweeps = new QueueSweeps(store, hub, opts, now);
  }

  createAddress(input: CreateAddressInput, clientKey: string): Promise<CreatedAddress> {
    return this.addresses.createAddress(input, clientKey);
  }

  /** The address if it exists and is not past its grace period (then it is as good as swept). */
  findAddress(addressId: string): Promise<AddressRecord | null> {
    return this.addresses.findAddress(addressId);
  }

  /** The address by the local part of its email (slug), for the SMTP listener. */
  findAddressBySlug(slug: string): Promise<AddressRecord | null> {
    return this.addresses.findAddressBySlug(slug);
  }

  /** A bearer credential checked in the order of design.md, "Errors" (addresses.ts). */
  authenticate(addressId: string, authorization: string | undefined): Promise<AddressRecord> {
    return this.addresses.authenticate(addressId, authorization);
  }

  /** `authenticate` without waiting, when the store holds the address in memory; undefined when only `authenticate` can tell. */
  authenticateNow(addressId: string, authorization: string | undefined): AddressRecord | undefined {
    return this.addresses.authenticateNow(addressId, authorization);
  }

  deleteAddress(address: AddressRecord): Promise<void> {
    return this.addresses.deleteAddress(address);
  }

  /** The inbox URL's credential: the address whose inbox secret this is, else 404 (addresses.ts). */
  openInbox(addressId: string, secret: string): Promise<AddressRecord> {
    return this.addresses.openInbox(addressId, secret);
  }

  /** `openInbox` without waiting when the store holds the address in memory; undefined when only `openInbox` can tell. */
  openInboxNow(addressId: string, secret: string): AddressRecord | undefined {
    return this.addresses.openInboxNow(addressId, secret);
  }

  /** POST /api/v1/inbox/{id}/{secret} once `openInbox` has resolved the address. */
  deliverToInbox(address: AddressRecord, input: EventInput, idempotencyKey: string | undefined): Promise<Delivery> {
    return this.deliveries.deliverToInbox(address, input, idempotencyKey);
  }

  /** Appends one event to an address's queue (any way in), resolved once durable (deliveries.ts). */
  deliver(
    address: AddressRecord,
    input: EventInput,
    idempotencyKey: string | undefined,
    defaultSource: string,
    route: DeliveryRoute = 'other',
    trust: string = INBOX_TRUST_JSON,
  ): Promise<Delivery> {
    return this.deliveries.deliver(address, input, idempotencyKey, defaultSource, route, trust);
  }

  /** GET /api/v1/addresses/{id}/events, held while `wait` allows (queue-readers.ts). */
  listEvents(address: AddressRecord, q: ListQuery, signal?: AbortSignal): Promise<Page> {
    return this.readers.listEvents(address, q, signal);
  }

  /** listEvents with a callback, for a caller that holds many reads at once; `cancel()` the result when the client leaves. */
  pollEvents(address: AddressRecord, q: ListQuery, callback: PollCallback): LongPoll {
    return this.readers.pollEvents(address, q, callback);
  }

  /** A live stream of the queue after `after` (event-stream.ts); `start()` it, and `cancel()` it when the client leaves. */
  streamEvents(address: AddressRecord, after: number, heartbeatMs: number, sink: StreamSink, filter?: EventFilter): EventStream {
    return this.readers.streamEvents(address, after, heartbeatMs, sink, filter);
  }

  /** MCP wait_for_event: the first event after `after` that passes `filter`, waiting up to `timeoutSeconds`. */
  waitForEvent(
    address: AddressRecord,
    after: number,
    timeoutSeconds: number,
    filter: EventFilter | undefined,
    signal?: AbortSignal,
  ): Promise<{ event: EventRecord | null; nextCursor: number }> {
    return this.readers.waitForEvent(address, after, timeoutSeconds, filter, signal);
  }

  /** Bytes stored beside an event of this address (design.md, "Bounded work"); 404 when there are none of that name. */
  openBlob(address: AddressRecord, eventId: string, name: BlobName): Promise<StoredBlob> {
    return this.readers.openBlob(address, eventId, name);
  }

  /** POST /api/v1/addresses/{id}/events/{eventId}/ack: idempotent; a second ack returns the first acknowledged_at. */
  ackEvent(address: AddressRecord, eventId: string): Promise<EventRecord> {
    return this.readers.ackEvent(address, eventId);
  }

  /** POST …/events/{eventId}/release: a quarantined event becomes an ordinary one (queue-readers.ts). */
  releaseEvent(address: AddressRecord, eventId: string): Promise<EventRecord> {
    return this.readers.releaseEvent(address, eventId);
  }

  /** Deletes addresses past expiresAt + grace, with their events; ends their waiting reads. */
  sweepExpired(batchSize?: number): Promise<number> {
    return this.sweeps.sweepExpired(batchSize);
  }

  /** Retention by age (RETAIN_ACKED_SECONDS), in short batches (queue-sweeps.ts); how many events were deleted. */
  sweepAcknowledged(batchSize?: number): Promise<number> {
    return this.sweeps.sweepAcknowledged(batchSize);
  }

  /**
   * Another room appended to the address through the store (an approval's step, approvals/): wake
   * this process's waiters. With a store that notifies across instances the notification arrives
   * anyway; waking here too saves the round trip for local readers.
   */
  addressChanged(addressId: string): void {
    this.hub.notify(addressId);
  }
}
