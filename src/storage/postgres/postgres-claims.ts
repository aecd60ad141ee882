// Claims on the PostgreSQL store (claim-sql.ts), each one statement, so several instances on one
// database claim as one service. The claim picks the oldest claimable events with
// `FOR UPDATE SKIP LOCKED` (pg-boss's fetchNextJob, graphile-worker's get_job): a row another
// claim is leasing right now is skipped instead of waited for, and a row that changed since the
// statement's snapshot is re-checked against the WHERE once locked (READ COMMITTED), so a row
// leased by a claim that committed meanwhile is no longer claimable. Two claimers therefore never
// hold live leases on one event. Expired final leases are made dead in the same statement, also
// with SKIP LOCKED (a row locked elsewhere dies at the next claim), which keeps claims free of lock
// waits and so of deadlocks. A nack NOTIFYs the address's channel, so waiting claims on every
// instance re-read at its commit.
import type pg from 'pg';
import {
  CLAIM_WINDOW_BYTES,
  CLAIM_WINDOW_EVENTS,
  type ClaimBatch,
  type ClaimRequest,
  type ClaimWindow,
  leaseLostReason,
  type Settlement,
  type SettleResult,
} from '../../claims/claim-rules.js';
import { isEmptyFilter } from '../../domain/event-filter.js';
import {
  type ClaimedRow,
  type ClaimWindowRow,
  claimable,
  claimWindowSql,
  EXPIRED_REASON,
  finalLeaseOver,
  intParam,
  type LeaseStateRow,
  leaseAssignments,
  leaseStateSql,
  nextChangeSql,
  OPEN,
  SETTLED_COLUMNS,
  type SettledRow,
  settleSet,
  settleWhere,
  toClaimWindow,
  toLeaseState,
} from '../claim-sql.js';
import { filterSql, needsDataJson, postgresJsonb, SqlParams } from '../event-filter-sql.js';
import { toEvent } from '../rows.js';
import { jsonBytesSql } from '../stored-bytes-sql.js';

type ClaimRow = { [K in keyof ClaimedRow]: ClaimedRow[K] | null } & { died: string; address_found: string };

export class PostgresClaims {
  /**
   * `claimPool` runs claims (each may scan, and every waiting claim re-runs on a change: the reads
   * pool); `settlePool` runs acks, extensions and nacks, short statements beside deliveries.
   */
  constructor(
    private readonly claimPool: pg.Pool,
    private readonly settlePool: pg.Pool,
    private readonly channel: string,
  ) {}

  async claim(addressId: string, r: ClaimRequest): Promise<ClaimBatch | null> {
    // A filtered claim examines one window of open events after its cursor (CLAIM_WINDOW_EVENTS).
    let window: ClaimWindow | undefined;
    if (!isEmptyFilter(r.filter)) {
      const w = new SqlParams('postgres');
      const windowSql = claimWindowSql({
        address: w.add(addressId),
        after: intParam(w, r.after),
        below: null,
        events: CLAIM_WINDOW_EVENTS,
        bytes: CLAIM_WINDOW_BYTES,
        jsonBytes: jsonBytesSql('postgres'),
        open: OPEN,
      });
      window = toClaimWindow((await this.claimPool.query<ClaimWindowRow>(windowSql, w.bound())).rows[0], r.after);
    }
    const p = new SqlParams('postgres');
    const a = p.add(addressId);
    const now = intParam(p, r.now);
    // The window, and any event before it that was leased before and is claimable again (nacked, or
    // its lease ran out, on any instance): the window already examined the others, and an event's JSON never changes.
    const range =
      window === undefined
        ? ''
        : ` AND ((e.sequence > ${intParam(p, r.after)} AND e.sequence <= ${intParam(p, window.examinedTo)}) OR (e.sequence <= ${intParam(p, r.after)} AND e.delivery_count > 0))`;
    const set = leaseAssignments({ now, leaseMs: intParam(p, r.leaseMs), nonce: `${p.add(r.nonce)}::text`, maxDeliveries: `${p.add(r.maxDeliveries)}::int` });
    const dataJson = needsDataJson(r.filter) ? `, LATERAL (SELECT ${postgresJsonb('e.data')} AS dj) AS j` : '';
    const sql = `WITH dying AS (
        SELECT address_id, sequence FROM events WHERE address_id = ${a} AND ${OPEN} AND ${finalLeaseOver(now)}
        FOR UPDATE SKIP LOCKED
      ), died AS (
        UPDATE events d SET dead_at = ${now}, dead_reason = ${EXPIRED_REASON}
        FROM dying WHERE d.address_id = dying.address_id AND d.sequence = dying.sequence RETURNING 1
      ), picked AS (
        SELECT e.address_id, e.sequence FROM events e${dataJson}
        WHERE e.address_id = ${a} AND ${OPEN}${range} AND ${claimable(now)} AND ${filterSql(r.filter, p)}
        ORDER BY e.sequence LIMIT ${p.add(r.max)}::int
        FOR UPDATE OF e SKIP LOCKED
      ), claimed AS (
        UPDATE events SET ${set} FROM picked
        WHERE events.address_id = picked.address_id AND events.sequence = picked.sequence
        RETURNING ${SETTLED_COLUMNS.split(', ')
          .map((c) => `events.${c}`)
          .join(', ')}, events.lease_id
      )
      SELECT c.*, s.died, s.address_found FROM (
        SELECT (SELECT count(*) FROM died) AS died, (SELECT count(*) FROM addresses WHERE id = ${a}) AS address_found
      ) AS s LEFT JOIN claimed AS c ON true
      ORDER BY c.sequence`;
    const res = await this.claimPool.query<ClaimRow>(sql, p.bound());
    const summary = res.rows[0];
    if (!summary || Number(summary.address_found) === 0) return null;
    const claims = res.rows
      .filter((row) => row.id !== null)
      .map((row) => ({
        event: toEvent(row as ClaimedRow),
        leaseId: row.lease_id as string,
        leaseExpiresAt: Number(row.lease_expires_at),
      }));
    let nextChangeAt: number | null = null;
    if (claims.length === 0) {
      const n = new SqlParams('postgres');
      const next = await this.claimPool.query<{ next_change: string | null }>(nextChangeSql(n.add(addressId), intParam(n, r.now)), n.bound());
      const v = next.rows[0]?.next_change;
      nextChangeAt = v === null || v === undefined ? null : Number(v);
    }
    const died = Number(summary.died);
    return window === undefined ? { claims, nextChangeAt, died } : { claims, nextChangeAt, died, window };
  }

  async settle(addressId: string, eventId: string, leaseId: string, s: Settlement, now: number): Promise<SettleResult> {
    const p = new SqlParams('postgres');
    const set = settleSet(p, s, now);
    const where = settleWhere(p, addressId, eventId, leaseId, s);
    // A nack makes the event claimable again (at once or after its delay): waiting claims on every
    // instance hear of it at the commit.
    const notify = s.kind === 'nack' ? `, pg_notify(${p.add(this.channel)}, u.address_id)` : '';
    const res = await this.settlePool.query<SettledRow>(
      `WITH u AS (UPDATE events SET ${set} WHERE ${where} RETURNING ${SETTLED_COLUMNS}) SELECT u.*${notify} FROM u`,
      p.bound(),
    );
    const row = res.rows[0];
    if (row) return { outcome: 'settled', event: toEvent(row), leaseExpiresAt: row.lease_expires_at === null ? null : Number(row.lease_expires_at) };
    const q = new SqlParams('postgres');
    const state = await this.settlePool.query<LeaseStateRow>(leaseStateSql(q, addressId, eventId), q.bound());
    if (!state.rows[0]) return { outcome: 'not_found' };
    return { outcome: 'lease_lost', why: leaseLostReason(toLeaseState(state.rows[0]), leaseId, s.kind) };
  }
}
