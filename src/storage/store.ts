// The one interface both backends implement. The domain service talks only to this; nothing
// above it knows whether SQLite or PostgreSQL is underneath. Backends differ by capability
// flags, not by `if (postgres)` scattered through the code.
import type { AddressRecord, AppendResult, EventPageRecord, EventRecord, NewEvent, RateDecision } from '../domain/model.js';

/**
 * Where a store reports what happens in the background, away from any request: a lost and regained
 * connection, a failed idle connection. Pino's (and so Fastify's) logger fits it.
 */
export interface StoreLog {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** For stores built without one (tests of the store alone). */
export const SILENT_STORE_LOG: StoreLog = { debug() {}, info() {}, warn() {} };

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
  subscribe?(onAddressChanged: (addressId: string) => void, onResync: () => void): Promise<void>;

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
  /** Deletes the address and all its events; false when it did not exist. */
  deleteAddress(id: string): Promise<boolean>;
  /** Deletes addresses whose expiresAt is before `cutoff`, with their events; returns their ids. */
  deleteExpired(cutoff: number, batchSize: number): Promise<string[]>;

  /**
   * Appends an event with the next sequence of its address, or returns the existing event with
   * the same dedupe key. Resolves only once the result is durably committed.
   */
  appendEvent(event: NewEvent, limits: StoreLimits): Promise<AppendResult>;
  /** Events with sequence > after, ascending, at most `limit`; null when the address does not exist. */
  listEvents(addressId: string, after: number, limit: number): Promise<EventPageRecord | null>;
  /** Sets acknowledged_at once (a second ack keeps the first time); null when no such event. */
  ackEvent(addressId: string, eventId: string, now: number): Promise<EventRecord | null>;
}
