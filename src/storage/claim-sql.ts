// The SQL of claims (src/claims/claim-rules.ts, migration 0008) that both stores run, in either
// dialect through SqlParams. An event is claimable when it is open (not acknowledged, not dead),
// holds no live lease and is not delayed. An open event whose final lease ran out (delivery_count
// reached the max_deliveries of the claim that leased it) is not claimable: the next claim on its
// address makes it dead. Every claim and settlement is one statement (PostgreSQL) or one
// transaction of the only writer (SQLite), so no background job is needed for any of it.
import type { Settlement } from '../claims/claim-rules.js';
import type { SqlParams } from './event-filter-sql.js';
import { EVENT_COLUMNS, EVENT_ID_TIME_SQL, type EventRow } from './rows.js';

/** An integer parameter, typed for PostgreSQL (which cannot add two untyped parameters). */
export const intParam = (p: SqlParams, v: number): string => (p.dialect === 'postgres' ? `${p.add(v)}::bigint` : p.add(v));

/** An open event: the partial index events_open covers exactly these. */
export const OPEN = 'acknowledged_at IS NULL AND dead_at IS NULL';

/** An open event whose final lease has run out at `now`: it dies instead of being claimed. */
export const finalLeaseOver = (now: string) => `lease_expires_at <= ${now} AND delivery_count >= max_deliveries`;

/** Claimable at `now` (with OPEN). */
export const claimable = (now: string) =>
  `(lease_expires_at IS NULL OR (lease_expires_at <= ${now} AND delivery_count < max_deliveries)) AND (available_at IS NULL OR available_at <= ${now})`;

/** The reason an event dies with when its final lease ran out. */
export const EXPIRED_REASON = `'lease expired on delivery ' || delivery_count || ' of max_deliveries ' || max_deliveries`;

/** What a claim writes on each claimed row. */
export const leaseAssignments = (p: { now: string; leaseMs: string; nonce: string; maxDeliveries: string }) =>
  `lease_id = 'lease_' || substr(id, 5) || '_' || ${p.nonce}, lease_expires_at = ${p.now} + ${p.leaseMs}, ` +
  `delivery_count = delivery_count + 1, max_deliveries = ${p.maxDeliveries}, available_at = NULL`;

/**
 * The earliest future moment an open event becomes claimable by time alone (a lease running out, a
 * delay ending). `open`: the store's condition for an open event (SQLite's names its index, SQLITE_OPEN).
 */
export const nextChangeSql = (address: string, now: string, open = OPEN) =>
  `SELECT MIN(CASE WHEN lease_expires_at > ${now} THEN lease_expires_at ELSE available_at END) AS next_change FROM events
   WHERE address_id = ${address} AND ${open} AND (lease_expires_at > ${now} OR available_at > ${now})`;

/**
 * A filtered claim's window (claim-rules.ts, CLAIM_WINDOW_EVENTS): the open events after `after`,
 * at most `events` of them and cut once their stored JSON passes `bytes` (the first always). One
 * row: `last_examined` (null when none), `examined`, `examined_bytes`, `fetched` (more than
 * `examined`: open events exist beyond the window).
 */
export const claimWindowSql = (w: { address: string; after: string; below: string | null; events: number; bytes: number; jsonBytes: string; open: string }) =>
  `SELECT MAX(sequence) AS last_examined, COUNT(*) AS examined, COALESCE(SUM(bytes), 0) AS examined_bytes, MAX(fetched) AS fetched FROM (
     SELECT sequence, bytes, SUM(bytes) OVER (ORDER BY sequence ROWS UNBOUNDED PRECEDING) AS running,
            ROW_NUMBER() OVER (ORDER BY sequence) AS rn, COUNT(*) OVER () AS fetched
     FROM (SELECT sequence, ${w.jsonBytes} AS bytes FROM events
           WHERE address_id = ${w.address} AND ${w.open} AND sequence > ${w.after}${w.below === null ? '' : ` AND sequence < ${w.below}`}
           ORDER BY sequence LIMIT ${w.events + 1}) AS fetched_events
   ) AS numbered WHERE rn <= ${w.events} AND (rn = 1 OR running <= ${w.bytes})`;

export interface ClaimWindowRow {
  last_examined: number | string | null;
  examined: number | string;
  examined_bytes: number | string;
  fetched: number | string | null;
}

export const toClaimWindow = (r: ClaimWindowRow | undefined, after: number) => ({
  examinedTo: r?.last_examined == null ? after : Number(r.last_examined),
  examined: Number(r?.examined ?? 0),
  examinedBytes: Number(r?.examined_bytes ?? 0),
  more: Number(r?.fetched ?? 0) > Number(r?.examined ?? 0),
});

/** Columns a settlement returns: the event, and its lease's end. */
export const SETTLED_COLUMNS = `${EVENT_COLUMNS}, lease_expires_at`;
export type SettledRow = EventRow & { lease_expires_at: number | string | null };
export type ClaimedRow = SettledRow & { lease_id: string };

/** The row a lease names, when its lease still holds for this settlement: the WHERE of the settling UPDATE. */
export function settleWhere(p: SqlParams, addressId: string, eventId: string, leaseId: string, s: Settlement): string {
  const e = p.add(eventId);
  const base =
    `${EVENT_ID_TIME_SQL} = substr(${e}, 10, 9) AND id = ${e} AND address_id = ${p.add(addressId)} AND lease_id = ${p.add(leaseId)}` +
    ' AND dead_at IS NULL AND lease_expires_at IS NOT NULL';
  // An ack repeated with the same lease answers the same event (acks are idempotent); an extend or
  // a nack needs the event still open.
  return s.kind === 'ack' ? base : `${base} AND acknowledged_at IS NULL`;
}

/** The SET of the settling UPDATE. */
export function settleSet(p: SqlParams, s: Settlement, now: number): string {
  switch (s.kind) {
    case 'ack':
      return `acknowledged_at = COALESCE(acknowledged_at, ${intParam(p, now)})`;
    case 'extend':
      return `lease_expires_at = ${intParam(p, now + s.leaseMs)}`;
    case 'nack': {
      const n = intParam(p, now);
      const reason = p.dialect === 'postgres' ? `${p.add(s.reason)}::text` : p.add(s.reason);
      const dies = s.dead ? 'TRUE' : 'delivery_count >= max_deliveries';
      const deadReason = s.dead
        ? `coalesce(${reason}, 'nacked as dead')`
        : `'nacked on delivery ' || delivery_count || ' of max_deliveries ' || max_deliveries || coalesce(': ' || ${reason}, '')`;
      return (
        `lease_expires_at = NULL, available_at = ${s.delayMs > 0 ? `${n} + ${intParam(p, s.delayMs)}` : 'NULL'}, ` +
        `dead_at = CASE WHEN ${dies} THEN ${n} END, dead_reason = CASE WHEN ${dies} THEN ${deadReason} END`
      );
    }
  }
}

/** After a settling UPDATE matched nothing: the row as it is, to tell lease_lost from not_found. */
export const leaseStateSql = (p: SqlParams, addressId: string, eventId: string) => {
  const e = p.add(eventId);
  return `SELECT lease_id, acknowledged_at, dead_at, lease_expires_at FROM events
    WHERE ${EVENT_ID_TIME_SQL} = substr(${e}, 10, 9) AND id = ${e} AND address_id = ${p.add(addressId)}`;
};
export interface LeaseStateRow {
  lease_id: string | null;
  acknowledged_at: number | string | null;
  dead_at: number | string | null;
  lease_expires_at: number | string | null;
}

const num = (v: number | string | null) => (v === null ? null : Number(v));
export const toLeaseState = (r: LeaseStateRow) => ({
  leaseId: r.lease_id,
  acknowledgedAt: num(r.acknowledged_at),
  deadAt: num(r.dead_at),
  leaseExpiresAt: num(r.lease_expires_at),
});
