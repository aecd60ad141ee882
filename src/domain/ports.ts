// The domain's ports: what the queue's rules need from the outside, implemented outside it.
// `Store` is implemented by both backends (src/storage/sqlite, src/storage/postgres); nothing
// above it knows which one is underneath, and backends differ by capability flags, not by
// `if (postgres)` scattered through the code. `WakeupHub` is implemented in process by
// src/wakeup/wakeup-hub.ts. Dependencies point inward: those modules import this file, never the
// other way round. A feature room beside the domain (approvals/, claims/, consumers/, sender-policy/)
// owns the port of what it stores; both stores implement those too, and the composition
// (src/compose.ts) hands the opened store to each room as its port.

import type { BlobName, StoredBlob } from '../blobs/event-blob.js';
import type { EventFilter } from './event-filter.js';
import type { AddressRecord, AppendResult, EventPageRecord, EventRecord, NewEvent, RateDecision, ScanPageRecord } from './model.js';

export type WakeReason = 'changed' | 'timeout' | 'shutdown';

export interface WakeListener {
  /**
   * Called synchronously from notify(), the timer, or shutdown(). A one-shot waiter is called once and
   * is deregistered by then; a kept waiter (`register(…, true)`) is called with 'changed' as often as
   * its address changes and stays registered, its timer untouched, until 'timeout', 'shutdown' or cancel().
   */
  wake(reason: WakeReason): void;
}

export interface Waiter {
  /** Deregisters without calling the listener (idempotent; a no-op once settled). */
  cancel(): void;
}

export interface TokenListener {
  /** The read token this wait was opened with was rotated away (on any instance). Called at most once. */
  revoked(): void;
}

/** Wake-ups for held reads: a hint that an address changed; the store stays the truth. */
export interface WakeupHub {
  /**
   * A one-shot waiter woken with the first of 'changed', 'timeout' (after `timeoutMs`) or 'shutdown'.
   * `keep`: 'changed' does not end it (a filtered waiter that checks the new events in memory and
   * waits on when none is for it: no new registration and no new timer per change).
   */
  register(addressId: string, timeoutMs: number, listener: WakeListener, keep?: boolean): Waiter;
  /** Something changed on this address (new event, deletion): every waiter re-reads. */
  notify(addressId: string): void;
  /**
   * Holds `listener` until cancel(): it is told once when the read token whose SHA-256 is
   * `readTokenHash` is rotated away, by this instance or (through the store's notifications)
   * another; at once, inside this call, when that rotation has already been heard. Only a reader's
   * wait registers (design.md, "Credential rotation"): deliveries never look at it.
   */
  watchToken(addressId: string, readTokenHash: Buffer, listener: TokenListener): Waiter;
}

/**
 * Where code away from any request reports what happens (a lost and regained connection, a failed
 * sweep). Pino's (and so Fastify's) logger fits it.
 */
export interface Log {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** For parts built without a log (tests of a store alone). */
export const SILENT_LOG: Log = { debug() {}, info() {}, warn() {}, error() {} };

/** A write asked of a store after close(). */
export class StoreClosedError extends Error {
  constructor() {
    super('store is closed');
    this.name = 'StoreClosedError';
  }
}

export interface StoreCapabilities {
  /**
   * The store tells other instances about new events and deletions (PostgreSQL NOTIFY), and
   * calls `onAddressChanged` for changes made by any instance. Without it, only this process
   * writes, and the service wakes its own waiters after each write.
   */
  readonly crossInstanceWakeups: boolean;
}

export interface StoreLimits {
  /** At most this many events per address; the oldest acknowledged ones are pruned to make room. */
  maxEventsPerAddress: number;
  /** At most this many bytes of data and metadata (UTF-8) per address, pruned the same way. */
  maxBytesPerAddress: number;
}

export interface Store {
  readonly kind: 'sqlite' | 'postgres';
  readonly capabilities: StoreCapabilities;

  /** Applies pending migrations; safe when several instances start at once. */
  migrate(): Promise<void>;
  /** Throws if the store cannot be reached (drives /readyz). */
  ping(): Promise<void>;
  close(): Promise<void>;

  /**
   * Registers the callback for address changes seen by the store (new event, deletion), from any
   * instance. Only called when `capabilities.crossInstanceWakeups`; `onResync` is called after a
   * lost connection is restored, when changes may have been missed.
   */
  subscribe?(
    onAddressChanged: (addressId: string) => void,
    onResync: () => void,
    /** A rotation on any instance replaced the read token named `identity` (credentials.ts, tokenIdentity). */
    onReadTokenRotated?: (addressId: string, identity: string) => void,
  ): Promise<void>;

  /**
   * Counts one creation against `key` in the fixed window containing `now` and inserts the
   * address, atomically: a refused attempt inserts nothing and does not count.
   */
  createAddress(address: AddressRecord, rate: { key: string; limit: number; windowMs: number; now: number }): Promise<RateDecision>;
  getAddress(id: string): Promise<AddressRecord | null>;
  /**
   * The address if this process holds it in memory, without waiting; undefined when it does not
   * (then ask getAddress). Only for a store that knows every change to what it holds.
   */
  heldAddress?(id: string): AddressRecord | undefined;
  /** The address whose email local part is `slug`. */
  getAddressBySlug(slug: string): Promise<AddressRecord | null>;
  /** The address's sealed signing secrets (null: none set); undefined when the address does not exist. */
  getSigningSecrets(addressId: string): Promise<Buffer | null | undefined>;
  /** Replaces the sealed signing secrets, durably; false when the address does not exist. */
  setSigningSecrets(addressId: string, sealed: Buffer | null): Promise<boolean>;
  /** Deletes the address and all its events; false when it did not exist. */
  deleteAddress(id: string): Promise<boolean>;
  /** Deletes addresses whose expiresAt is before `cutoff`, with their events; returns their ids. */
  deleteExpired(cutoff: number, batchSize: number): Promise<string[]>;

  /**
   * Appends an event with the next sequence of its address, or returns the existing event with
   * the same dedupe key. Resolves only once the result is durably committed. After close() it
   * rejects with StoreClosedError and writes nothing.
   */
  appendEvent(event: NewEvent, limits: StoreLimits): Promise<AppendResult>;
  /**
   * Events with sequence > after, ascending, at most `limit`; null when the address does not exist.
   * `after` is a safe integer >= 0 (the callers validate it), so no store clamps it.
   * The page also stops before the event whose stored JSON (`data` and `metadata`, in UTF-8 bytes)
   * would take the page's total past `maxBytes`, which callers keep at least MAX_EVENT_BYTES (so
   * the first event always fits): a page is bounded in memory and in the size of its rendering.
   * Rows past the cut are never loaded into the process.
   */
  listEvents(addressId: string, after: number, limit: number, maxBytes: number): Promise<EventPageRecord | null>;
  /**
   * A filtered read (event-filter.ts), evaluated by the database: the events after `after` that
   * pass `filter`, ascending, at most `limit` and cut at `maxBytes` as listEvents does, among at
   * most SCAN_EVENTS examined events (or SCAN_BYTES of their stored JSON); null when the address does
   * not exist. See event-filter-sql.ts's scanPage for nextCursor and hasMore.
   */
  scanEvents(addressId: string, after: number, filter: EventFilter, limit: number, maxBytes: number): Promise<ScanPageRecord | null>;
  /**
   * A blob stored beside an event of this address (blobs/event-blob.ts), opened for reading in
   * chunks; null when the address, the event or the blob does not exist.
   */
  openBlob(addressId: string, eventId: string, name: BlobName): Promise<StoredBlob | null>;
  /**
   * Counts one attempt against `key` in the fixed window containing `now` (domain/rate-window.ts),
   * shared by every instance on the store; a refused attempt does not count.
   */
  countRate(rate: { key: string; limit: number; windowMs: number; now: number }): Promise<RateDecision>;
  /**
   * Deletes at most `batchSize` events acknowledged before `cutoff` (RETAIN_ACKED_SECONDS), in one
   * short transaction, keeping each address's event_count and event_bytes exact; returns how many.
   */
  deleteAcknowledgedBefore(cutoff: number, batchSize: number): Promise<number>;
  /** Gives space freed by deletions back (SQLite: a bounded incremental vacuum; PostgreSQL: autovacuum's job). */
  reclaimSpace(): Promise<void>;
  /**
   * Cheap totals for /metrics, bounded work: events stored, unacknowledged events (counted up to
   * `countCap`), and the creation time of the oldest unacknowledged event (null: none).
   */
  queueTotals(countCap: number): Promise<{ stored: number; unacknowledged: number; oldestUnacknowledgedAt: number | null }>;
  /**
   * For a store another process may write (an operator's `admin delete` beside a running SQLite
   * service): `onChange` is called when a change made elsewhere was seen, after the caches dropped it.
   */
  watchExternalChanges?(onChange: () => void): void;
  /**
   * Sets released_at once on a quarantined event (a second release keeps the first time) and returns
   * the event; an event never quarantined is returned unchanged; null when no such event.
   */
  releaseEvent(addressId: string, eventId: string, now: number): Promise<EventRecord | null>;
  /** Sets acknowledged_at once (a second ack keeps the first time); null when no such event. */
  ackEvent(addressId: string, eventId: string, now: number): Promise<EventRecord | null>;
}
