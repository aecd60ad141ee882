// Where an events/poll or events/stream starts (SEP-3415, "Cursor Lifecycle"), from the client's
// cursor and maxAgeMs, over the address's sequence:
// - the cursor (a null one is 0, the start of what the queue keeps: design.md, "MCP, current
//   revision", says why this is not the extension's "now");
// - maxAgeMs moves the start forward to the first event no older than now − maxAgeMs when that is
//   later than the cursor, and says so with truncated: true (events were skipped);
// - retention (acknowledged events pruned, expired ones swept) after the cursor is truncated too.
// The store has no "first event after a time" read, and the domain service is not this room's to
// change: it is found by a search over the dense sequence with one-event reads (each an indexed
// look-up), O(log n) reads for a queue of n events. Every probe reads with state=all, so an event
// held in quarantine counts as a position like any other (default reads skip it, which must not
// look like a gap).

import { type EventFilter, parseEventFilter } from '../domain/event-filter.js';
import type { AddressRecord, EventRecord } from '../domain/model.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';

/** Every event, quarantined ones included: the probes see positions, not what a reader is shown. */
const EVERY_EVENT: EventFilter = parseEventFilter({ state: 'all' }, 'argument');
/** How far the first gallop step reaches past a known position. */
const FIRST_STEP = 64;

export interface Start {
  /** The sequence to read after. */
  after: number;
  /** Whether events after the client's cursor were skipped (retention, or the maxAgeMs floor). */
  truncated: boolean;
}

/** The first event (any state) with a sequence greater than `after`, or null (webhook-control.ts finds gaps with it too). */
export async function firstKeptAfter(service: ReturnAddressService, address: AddressRecord, after: number): Promise<EventRecord | null> {
  const page = await service.listEvents(address, { after, limit: 1, wait: 0, filter: EVERY_EVENT });
  return page.events[0] ?? null;
}

/**
 * The smallest position x ≥ known at which `done(first event after x)` holds, given that it does
 * not hold before `known` and that it holds for every later x once it holds for one (monotone): a
 * gallop from the known position, then a bisection, jumping to each event a probe finds.
 */
async function search(service: ReturnAddressService, address: AddressRecord, known: number, done: (e: EventRecord | null) => boolean): Promise<number> {
  let lo = known;
  let hi: number | undefined;
  for (let step = FIRST_STEP; hi === undefined; step *= 2) {
    const e = await firstKeptAfter(service, address, lo + step);
    if (done(e)) hi = lo + step;
    else lo = (e as EventRecord).sequence;
  }
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    const e = await firstKeptAfter(service, address, mid);
    if (done(e)) hi = mid;
    else lo = (e as EventRecord).sequence;
  }
  return lo;
}

/**
 * Whether retention removed events after `after`: sequences have no gaps, so the first event kept
 * after the cursor is its next sequence unless some were pruned or expired in between.
 */
export async function truncatedAfter(service: ReturnAddressService, address: AddressRecord, after: number): Promise<boolean> {
  const e = await firstKeptAfter(service, address, after);
  return e !== null && e.sequence > after + 1;
}

/**
 * Whether retention removed events between `after` and the first event a read shows after it,
 * reading only when that is in doubt: the shown event is the next sequence (the common case of a
 * client draining its queue) costs nothing; a later one, or none shown by a filtered read (which
 * may pass over kept events), costs one read.
 */
export async function prunedBefore(
  service: ReturnAddressService,
  address: AddressRecord,
  after: number,
  shown: EventRecord | undefined,
  filtered: boolean,
): Promise<boolean> {
  if (shown === undefined ? !filtered : shown.sequence === after + 1) return false;
  return truncatedAfter(service, address, after);
}

/**
 * The start of a subscription: the cursor, moved past events older than maxAgeMs
 * when one is given, and whether anything after the cursor was skipped. With `pruned` false the
 * caller checks retention itself, after its first read (prunedBefore).
 */
export async function startOf(
  service: ReturnAddressService,
  address: AddressRecord,
  cursor: number,
  maxAgeMs: number | undefined,
  now: number,
  pruned: boolean,
): Promise<Start> {
  if (maxAgeMs !== undefined) {
    const floor = now - maxAgeMs;
    const recent = (e: EventRecord | null) => e === null || e.createdAt >= floor;
    const first = await firstKeptAfter(service, address, cursor);
    // Every event up to `first` is older than the floor (events are stored in time order).
    if (!recent(first)) return { after: await search(service, address, (first as EventRecord).sequence, recent), truncated: true };
    if (pruned) return { after: cursor, truncated: first !== null && first.sequence > cursor + 1 };
  } else if (pruned) {
    return { after: cursor, truncated: await truncatedAfter(service, address, cursor) };
  }
  return { after: cursor, truncated: false };
}
