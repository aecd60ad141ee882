// What the holder of an address's read token does with its queue (design.md, "The queue", "The wakeup
// hub and followers"): read a page, hold a read until something arrives (long-poll, stream, MCP's
// wait), open a blob, acknowledge and release an event. Every read goes through the shared reads
// (event-reads.ts) with its byte budget. A part of ReturnAddressService, which every way in speaks to.
import type { BlobName, StoredBlob } from '../blobs/event-blob.js';
import { EVENT_ID_RE } from './credentials.js';
import { ApiError, notFound } from './errors.js';
import { type EventFilter, isEmptyFilter } from './event-filter.js';
import { EventReads } from './event-reads.js';
import { EventStream, type StreamSink } from './event-stream.js';
import { LongPoll, type PollCallback, type ScreenAfter } from './long-poll.js';
import type { AddressRecord, EventRecord, ListQuery, Page } from './model.js';
import type { Store, WakeupHub } from './ports.js';

export interface ReadOptions {
  /** A page holds events up to this many bytes of stored JSON: MAX_PAGE_BYTES. */
  maxPageBytes: number;
  /** MAX_EVENT_BYTES: every page budget is at least this, so every event fits in a page. */
  maxEventBytes: number;
}

/** Stored JSON bytes a stream reads at once (raised to MAX_EVENT_BYTES when that is larger): what a blocked stream may hold. */
export const STREAM_PAGE_BYTES = 1024 * 1024;

/** Distinct filter texts remembered for screens; a filter not remembered still screens, unshared. */
const SHARED_FILTERS = 1024;

export class QueueReaders {
  /** Every reader's reads, shared by the readers asking the same in one turn (event-reads.ts). */
  private readonly reads: EventReads;
  /** Filters by their text, for screens (screenFor): at most SHARED_FILTERS, then forgotten all at once. */
  private readonly filters = new Map<string, EventFilter>();

  constructor(
    private readonly store: Store,
    private readonly hub: WakeupHub,
    private readonly opts: ReadOptions,
    private readonly now: () => number,
  ) {
    this.reads = new EventReads(store);
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
      this.screenFor(address.id, q.filter),
      // A wait ends when the reader's token is rotated away; a plain read (push's too) never waits.
      deadline === undefined ? undefined : address.readTokenHash,
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
      this.screenFor(address.id, filter),
      address.readTokenHash,
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
    this.hub.notify(address.id);
    return event;
  }

  /** How a filtered reader screens the changes of its address (EventReads.screen); none without a filter. */
  private screenFor(addressId: string, filter: EventFilter | undefined): ScreenAfter | undefined {
    if (filter === undefined || isEmptyFilter(filter)) return undefined;
    // One object per filter text: the screen evaluates a run of waiters holding it once.
    const text = JSON.stringify(filter);
    let shared = this.filters.get(text);
    if (shared === undefined) {
      if (this.filters.size >= SHARED_FILTERS) this.filters.clear();
      this.filters.set(text, (shared = filter));
    }
    const f = shared;
    return (after, target) => this.reads.screen(addressId, after, f, target);
  }

  /** A page for a reader (event-reads.ts: shared with the readers asking the same in this turn, filters run in memory). */
  private readPage(addressId: string, after: number, limit: number, maxBytes = this.opts.maxPageBytes, filter?: EventFilter): Promise<Page> {
    // Never below MAX_EVENT_BYTES: then every event fits in a page, and no page needs an exception for a large first event.
    const budget = Math.max(this.opts.maxEventBytes, Math.min(maxBytes, this.opts.maxPageBytes));
    return this.reads.page(addressId, after, limit, budget, filter);
  }
}
