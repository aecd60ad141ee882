// Every read of an address's queue for the service's readers (long-polls, streams, MCP), shared
// between the readers that ask for the same thing in the same turn (design.md, "The wakeup hub and
// followers": one read of the new events per wake, whatever the number of waiters).
//
// An unfiltered page is one store read, joined by every reader asking for the same cursor, limit
// and budget before it starts. A filtered page is made from windows: plain pages of at most
// WINDOW_EVENTS events after the cursor, joined by every reader at that cursor, whatever its filter.
// Each reader then runs its filter over the window in memory (event-filter-eval.ts, the SQL's rule)
// and examines events exactly as the store's bounded scan does: at most SCAN_EVENTS events and
// SCAN_BYTES of stored JSON after its cursor (the first always), its matches cut at its limit and
// byte budget. So 1,000 filtered waiters woken by one event cost one read of that event and 1,000
// evaluations of it, not 1,000 filtered scans; a reader far behind walks its windows, each a
// bounded read, the event loop free between them (nextTurn: also when the store answers at once).
//
// A read is only joined before it starts (it starts in a microtask), so every joiner registered
// its waiter before the read began: what keeps a waiter from missing an event (follower.ts).
import { notFound } from './errors.js';
import { type EventFilter, isEmptyFilter, SCAN_BYTES, SCAN_EVENTS } from './event-filter.js';
import { eventPasses } from './event-filter-eval.js';
import { type EventPageRecord, type EventRecord, isHeld, type Page } from './model.js';
import type { Store } from './ports.js';

/** Events in one window of a filtered read, and the stored JSON it reads at most (the first event always). */
export const WINDOW_EVENTS = 200;
export const WINDOW_BYTES = 2 * 1024 * 1024;

/** What a page's byte budgets count of an event: its stored data and metadata, in UTF-8 (stored-bytes-sql.ts' jsonBytesSql). */
export const eventJsonBytes = (e: EventRecord): number => Buffer.byteLength(e.data) + (e.metadata === null ? 0 : Buffer.byteLength(e.metadata));

/**
 * A waiter's part in a screen (EventReads.screen): `cursor` is where the events read end when none
 * passes its filter (it moves there in memory and waits on), undefined when it should read (a
 * match, more than a window of new events, the address gone or the read failed).
 */
export interface Screened {
  screened(cursor: number | undefined): void;
}

/** The waiters at one cursor of one address that asked for a screen in the same turn. */
interface ScreenBatch {
  addressId: string;
  after: number;
  filters: EventFilter[];
  targets: Screened[];
}

// A complete window is within the scan's bound, so a screen that finds no match in it has examined
// what a scan would have, and may move the cursor past it without a page saying so.
if (WINDOW_EVENTS > SCAN_EVENTS || WINDOW_BYTES > SCAN_BYTES) throw new Error('a window must fit in the scan bound');

let turn: Promise<void> | undefined;

/** A promise of the next turn of the event loop, one for every caller in this turn. */
export function nextTurn(): Promise<void> {
  turn ??= new Promise<void>((resolve) =>
    setImmediate(() => {
      turn = undefined;
      resolve();
    }),
  );
  return turn;
}

export class EventReads {
  /** Reads not yet started, by what they read: joined by readers asking the same in the same turn. */
  private readonly pending = new Map<string, Promise<EventPageRecord | null>>();
  /** Screens not yet started, by address and cursor. */
  private readonly screens = new Map<string, ScreenBatch>();
  /** The batch joined last, while it has not started. */
  private lastScreen: ScreenBatch | undefined;

  constructor(private readonly store: Store) {}

  /** The page after `after`: at most `limit` events cut at `budget` bytes (the first always), filtered when a filter is given. */
  async page(addressId: string, after: number, limit: number, budget: number, filter?: EventFilter): Promise<Page> {
    if (filter !== undefined && !isEmptyFilter(filter)) return this.scan(addressId, after, limit, budget, filter);
    const page = await this.joined(addressId, after, limit, budget);
    if (!page) throw notFound('Address');
    const last = page.events.at(-1);
    // Events held in quarantine are examined and passed over, as a filter passes over what it does
    // not keep: the cursor moves past them (design.md, "Sender policy and quarantine").
    const events = filter?.state === 'all' || !page.events.some(isHeld) ? page.events : page.events.filter((e) => !isHeld(e));
    return { events, nextCursor: last ? last.sequence : after, hasMore: page.hasMore };
  }

  /** The store's bounded scan (Store.scanEvents), over shared windows and in memory. */
  private async scan(addressId: string, after: number, limit: number, budget: number, filter: EventFilter): Promise<Page> {
    const matches: EventRecord[] = [];
    let matchBytes = 0;
    let examined = 0;
    let examinedBytes = 0;
    let cursor = after;
    for (;;) {
      const window = await this.joined(addressId, cursor, WINDOW_EVENTS, WINDOW_BYTES);
      if (!window) throw notFound('Address');
      for (const e of window.events) {
        const bytes = eventJsonBytes(e);
        // The scan's bound: this event is not examined; the next read starts here.
        if (examined > 0 && (examined >= SCAN_EVENTS || examinedBytes + bytes > SCAN_BYTES)) return { events: matches, nextCursor: cursor, hasMore: true };
        if (eventPasses(e, filter)) {
          // The page's bound: the next read starts after the last event returned.
          if (matches.length >= limit || (matches.length > 0 && matchBytes + bytes > budget)) {
            return { events: matches, nextCursor: matches.at(-1)!.sequence, hasMore: true };
          }
          matches.push(e);
          matchBytes += bytes;
        }
        examined++;
        examinedBytes += bytes;
        cursor = e.sequence;
      }
      if (!window.hasMore || window.events.length === 0) return { events: matches, nextCursor: cursor, hasMore: false };
      // The next window after a turn of the event loop: a store that answers synchronously (SQLite)
      // otherwise ran all of a scan's windows in one turn (10 reads at the scan bound held a
      // delivery elsewhere 3-7 s). Every reader yields to the same turn, so readers in step stay in
      // step and go on sharing their windows.
      await nextTurn();
    }
  }

  /**
   * Whether the events after `after` hold anything for `filter`, answered to `target` (Screened):
   * one window read for every waiter of the address at that cursor that asks in the same turn,
   * then each filter in memory. A woken filtered waiter asks this instead of reading, so a change
   * costs the waiters it is not for one evaluation each: no page, no new registration, no timer.
   * Joined only before the read starts, like every shared read: each joiner was woken before it.
   */
  screen(addressId: string, after: number, filter: EventFilter, target: Screened): void {
    // The waiters of one address are woken one after another: most join the batch the last one joined.
    let batch = this.lastScreen !== undefined && this.lastScreen.addressId === addressId && this.lastScreen.after === after ? this.lastScreen : undefined;
    const key = batch === undefined ? `${addressId} ${after}` : '';
    batch ??= this.screens.get(key);
    if (batch === undefined) {
      const b: ScreenBatch = { addressId, after, filters: [], targets: [] };
      this.screens.set(key, (batch = b));
      queueMicrotask(() => {
        this.screens.delete(key);
        if (this.lastScreen === b) this.lastScreen = undefined;
        this.joined(addressId, after, WINDOW_EVENTS, WINDOW_BYTES).then(
          (window) => settleScreen(b, window, after),
          () => settleScreen(b, null, after),
        );
      });
    }
    this.lastScreen = batch;
    batch.filters.push(filter);
    batch.targets.push(target);
  }

  private joined(addressId: string, after: number, limit: number, budget: number): Promise<EventPageRecord | null> {
    const key = `${addressId} ${after} ${limit} ${budget}`;
    let read = this.pending.get(key);
    if (read === undefined) {
      read = new Promise<void>((start) => queueMicrotask(start)).then(() => {
        this.pending.delete(key);
        return this.store.listEvents(addressId, after, limit, budget);
      });
      this.pending.set(key, read);
    }
    return read;
  }
}

function settleScreen(batch: ScreenBatch, window: EventPageRecord | null, after: number): void {
  const { filters, targets } = batch;
  // Gone, failed, or more than a window: each waiter reads, and its read answers.
  const end = window === null || window.hasMore ? undefined : (window.events.at(-1)?.sequence ?? after);
  // Waiters holding the same filter share one object (QueueReaders interns them), and are mostly
  // woken side by side: one evaluation answers a run of them.
  let last: EventFilter | undefined;
  let lastCursor: number | undefined;
  for (let i = 0; i < targets.length; i++) {
    let cursor = end;
    const filter = filters[i]!;
    if (cursor !== undefined && filter === last) cursor = lastCursor;
    else if (cursor !== undefined) {
      for (const e of window!.events) {
        if (eventPasses(e, filter)) {
          cursor = undefined;
          break;
        }
      }
      last = filter;
      lastCursor = cursor;
    }
    try {
      targets[i]!.screened(cursor);
    } catch (err) {
      process.emitWarning(`a screened waiter threw: ${String(err)}`, 'FollowerCallbackError');
    }
  }
}
