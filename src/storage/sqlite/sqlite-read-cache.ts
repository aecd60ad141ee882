// The SQLite store's read caches, and how they learn of writes made by another process.
//
// This process is the only service writing, so it knows every change it makes; the one other
// writer, an operator's `admin delete`, is seen through PRAGMA data_version at the first cache lookup
// of each turn of the event loop (and twice a second), which then drops all caches and wakes the waiters (docs/design.md,
// "Operating a public instance": "An operator's write is seen at once"). Address rows (immutable
// once created) are cached by id and dropped when the address is deleted or swept; pages of events
// are cached per address and dropped on any change to that address's events (an append, a batch
// becoming durable, an ack, a deletion). Both are bounded (docs/design.md, "Bounded work").
import type Database from 'better-sqlite3';
import type { AddressRecord, EventPageRecord } from '../../domain/model.js';

/** Bounds of the in-process caches. */
const ADDRESS_CACHE_SIZE = 10_000;
/**
 * What cached pages may hold, all addresses together, in characters of stored JSON plus a per-event
 * allowance for the record and its rendering. A budget by count let 10,000 cached events of 1 MB
 * each hold 10 GB.
 */
const PAGE_CACHE_BYTES = 32 * 1024 * 1024;
const EVENT_OVERHEAD_BYTES = 1024;
/**
 * Pages kept per address: enough for the windows of one filtered scan (event-reads.ts: 50 windows
 * at SCAN_EVENTS), so readers that trail one another over a long queue read each window once, not
 * once each (10 filtered reads at the scan bound: 10 times the store's work with 2 pages).
 */
const PAGE_CACHE_PER_ADDRESS = 64;
/** How often a running service looks for writes made by another process (`admin delete`), besides every cache hit. */
const EXTERNAL_CHANGE_POLL_MS = 500;

export class SqliteReadCache {
  /** Address rows by id, oldest first (a Map keeps insertion order). */
  private readonly addresses = new Map<string, AddressRecord>();
  /** Pages of events by address, then by `${after}:${limit}:${maxBytes}`; frozen, shared by every reader. */
  private readonly pages = new Map<string, Map<string, EventPageRecord>>();
  /** The weight of `pages` (pageWeight), kept under PAGE_CACHE_BYTES. */
  private cachedBytes = 0;
  /**
   * PRAGMA data_version as last seen: it changes when another connection (an operator's `admin`
   * command) commits. Checked on every cache hit, so a deleted address is never served from a cache.
   */
  private seenDataVersion: number;
  private readonly dataVersion: Database.Statement<[], number>;
  private onExternalChange: (() => void) | undefined;
  /** data_version was read in this turn of the event loop; a setImmediate clears it at the turn's end. */
  private checkedThisTurn = false;
  private readonly turnEnded = () => {
    this.checkedThisTurn = false;
  };

  /**
   * `isClosed`: once the store is closed its connection is gone, and nothing is checked.
   * `beforeExternalChange`: the store's own state to refresh first (its queue counters).
   */
  constructor(
    db: Database.Database,
    private readonly isClosed: () => boolean,
    private readonly beforeExternalChange: () => void = () => {},
  ) {
    this.dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck();
    this.seenDataVersion = this.dataVersion.get() as number;
  }

  /**
   * Another process committed (an operator's `admin delete` while this service runs): every cache
   * may be stale, so all of it goes, and the waiters re-read (a deleted address's long-polls end
   * with 404). One PRAGMA read per turn of the event loop (design.md, "Operating a public instance").
   */
  checkExternalChanges(): void {
    if (this.checkedThisTurn || this.isClosed()) return;
    this.checkedThisTurn = true;
    setImmediate(this.turnEnded);
    this.checkExternalChangesNow();
  }

  /** The same check, whether or not this turn made it already (the writer, under its write lock). */
  checkExternalChangesNow(): void {
    const version = this.dataVersion.get() as number;
    if (version === this.seenDataVersion) return;
    this.seenDataVersion = version;
    this.beforeExternalChange();
    this.addresses.clear();
    this.pages.clear();
    this.cachedBytes = 0;
    this.onExternalChange?.();
  }

  watchExternalChanges(onChange: () => void): void {
    this.onExternalChange = onChange;
    // Waiters hold no cache hit that would notice, so a timer looks too.
    setInterval(() => this.checkExternalChanges(), EXTERNAL_CHANGE_POLL_MS).unref();
  }

  /** The cached address row; callers run checkExternalChanges first. */
  address(id: string): AddressRecord | undefined {
    return this.addresses.get(id);
  }

  rememberAddress(id: string, a: AddressRecord): void {
    if (this.addresses.size >= ADDRESS_CACHE_SIZE) this.addresses.delete(this.addresses.keys().next().value as string);
    this.addresses.set(id, a);
  }

  /** The cached page; callers run checkExternalChanges first. */
  page(addressId: string, key: string): EventPageRecord | undefined {
    return this.pages.get(addressId)?.get(key);
  }

  rememberPage(addressId: string, key: string, page: EventPageRecord): void {
    let byKey = this.pages.get(addressId);
    if (byKey) this.pages.delete(addressId);
    this.pages.set(addressId, (byKey ??= new Map()));
    if (byKey.size >= PAGE_CACHE_PER_ADDRESS) {
      const oldest = byKey.keys().next().value as string;
      this.cachedBytes -= pageWeight(byKey.get(oldest));
      byKey.delete(oldest);
    }
    byKey.set(key, page);
    this.cachedBytes += pageWeight(page);
    // Over budget: drop whole addresses, least recently filled first, then this address's own
    // oldest pages (never the page just filled).
    for (const oldest of this.pages.keys()) {
      if (this.cachedBytes <= PAGE_CACHE_BYTES || oldest === addressId) break;
      this.dropPages(oldest);
    }
    for (const [oldKey, old] of byKey) {
      if (this.cachedBytes <= PAGE_CACHE_BYTES || oldKey === key) break;
      this.cachedBytes -= pageWeight(old);
      byKey.delete(oldKey);
    }
  }

  /** The address's rows changed (or it is gone): forget what is cached about it. */
  forget(addressId: string, deleted = false): void {
    this.dropPages(addressId);
    if (deleted) this.addresses.delete(addressId);
  }

  private dropPages(addressId: string): void {
    const byKey = this.pages.get(addressId);
    if (!byKey) return;
    for (const p of byKey.values()) this.cachedBytes -= pageWeight(p);
    this.pages.delete(addressId);
  }
}

const pageWeight = (p: EventPageRecord | undefined): number => {
  if (!p) return 0;
  let bytes = EVENT_OVERHEAD_BYTES; // an empty page costs something too
  for (const e of p.events) bytes += EVENT_OVERHEAD_BYTES + e.data.length + (e.metadata?.length ?? 0);
  return bytes;
};
