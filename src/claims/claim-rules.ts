// The rules of claims (design.md, "Claims"), with no I/O: the limits of a claim and of its settling,
// and lease ids. A lease id is a fencing token: `lease_<the event id's 26 characters>_<20 random>`.
// The event's row keeps the lease id of the claim that leased it last; an ack, extend or nack
// names a lease, and succeeds only while that lease is still the row's. Once the event was
// claimed again (or acked, nacked or dead) the old lease answers 409 lease_lost. The event id
// inside the lease is what lets the store find the row by its primary index, and tell a lease it
// superseded (409) from one that never named an existing event (404).
import { randomBytes } from 'node:crypto';
import type { EventFilter } from '../domain/event-filter.js';
import { MAX_WAIT_SECONDS } from '../domain/long-poll.js';
import type { EventRecord } from '../domain/model.js';

export const CLAIM_LIMITS = {
  max: { min: 1, max: 100, default: 1 },
  lease_seconds: { min: 5, max: 3600, default: 60 },
  wait: { min: 0, max: MAX_WAIT_SECONDS, default: 0 },
  max_deliveries: { min: 1, max: 100, default: 5 },
  delay_seconds: { min: 0, max: 86_400, default: 0 },
  reason_chars: 500,
} as const;

export const LEASE_ID_PATTERN = '^lease_[0-9a-z]{26}_[A-Za-z0-9_-]{20}$';
const LEASE_ID_RE = new RegExp(LEASE_ID_PATTERN);

/** The random part of one claim's leases: each event's lease id is `lease_<event>_<nonce>` (unique per event and claim). */
export const newLeaseNonce = (): string => randomBytes(15).toString('base64url');

/** The id of the event a lease names, or null when the text is no lease id. */
export function leaseEventId(leaseId: string): string | null {
  return LEASE_ID_RE.test(leaseId) ? `evt_${leaseId.slice(6, 32)}` : null;
}

/**
 * A filtered claim examines the address's open events in windows (design.md, "Claims"): one claim
 * statement looks at most this many open events after its cursor, cut once their stored JSON passes
 * CLAIM_WINDOW_BYTES (the first always), so no statement holds the store long whatever the queue
 * holds. A claim that answers at once examines windows up to SCAN_EVENTS events or SCAN_BYTES (the
 * bounds of a filtered read) and then answers what it found, maybe nothing; a waiting claim goes on
 * from where it got to.
 */
export const CLAIM_WINDOW_EVENTS = 100;
export const CLAIM_WINDOW_BYTES = 2 * 1024 * 1024;

/** What one claim asks of the store. Times are epoch ms. */
export interface ClaimRequest {
  max: number;
  leaseMs: number;
  maxDeliveries: number;
  filter: EventFilter;
  nonce: string;
  now: number;
  /** A filtered claim examines only open events after this sequence, one window of them (CLAIM_WINDOW_EVENTS, CLAIM_WINDOW_BYTES). */
  after: number;
}

/** Where a filtered claim's window got to (absent for an unfiltered claim, which examines no JSON and no window). */
export interface ClaimWindow {
  /** The last open event examined, or the claim's `after` when none was. */
  examinedTo: number;
  /** Open events examined and their stored JSON bytes. */
  examined: number;
  examinedBytes: number;
  /** Open events exist after `examinedTo` that this window did not examine. */
  more: boolean;
}

export interface ClaimRecord {
  event: EventRecord;
  leaseId: string;
  leaseExpiresAt: number;
}

/** A claim's answer from the store; null from the store when the address does not exist. */
export interface ClaimBatch {
  claims: ClaimRecord[];
  /**
   * With no claim made: the earliest future moment an event of the address becomes claimable by
   * time alone (a live lease running out, a delayed nack ending), or null. A waiting claim sleeps
   * no longer than this, which is what wakes it on lease expiry across instances.
   */
  nextChangeAt: number | null;
  /** Events this claim found with their final lease run out, and made dead. */
  died: number;
  /** A filtered claim's window. */
  window?: ClaimWindow;
}

export type Settlement = { kind: 'ack' } | { kind: 'extend'; leaseMs: number } | { kind: 'nack'; delayMs: number; reason: string | null; dead: boolean };

export type SettleResult =
  | { outcome: 'settled'; event: EventRecord; leaseExpiresAt: number | null }
  /** The event exists, but this lease is no longer its lease (`why` says what happened). */
  | { outcome: 'lease_lost'; why: string }
  | { outcome: 'not_found' };

/** Why a lease no longer holds, from the row as it is now (the store calls this when its update matched nothing). */
export function leaseLostReason(
  row: { leaseId: string | null; acknowledgedAt: number | null; deadAt: number | null; leaseExpiresAt: number | null },
  leaseId: string,
  kind: Settlement['kind'],
): string {
  if (row.leaseId !== leaseId)
    return 'the event was claimed again since this lease was handed out (its lease ran out, or it was nacked); the new lease holder settles it.';
  if (row.deadAt !== null) return 'the event is dead (its final lease ran out, or it was nacked as dead); it is never claimed again.';
  if (row.acknowledgedAt !== null) return `the event is already acknowledged; a ${kind} after the ack changes nothing.`;
  return 'this lease was already given back by a nack.';
}
