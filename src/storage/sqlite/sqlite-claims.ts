// Claims on the SQLite store (claim-sql.ts). This process is the only writer and better-sqlite3
// runs each transaction to its end before anything else runs, so a claim (make the expired final
// leases dead, pick the oldest claimable events, lease them) is one transaction that no other
// claim can interleave with: two claimers can never lease the same event. Events of a batch not
// yet durable are invisible to claims as to every reader (`visibleBelow`), and nothing is answered
// before the claim or settlement is on disk.
import type Database from 'better-sqlite3';
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
import { filterSql, SqlParams } from '../event-filter-sql.js';
import { toEvent } from '../rows.js';

/** Prepared statements kept, by their SQL (one per filter shape and settlement kind). */
const STATEMENTS = 64;

/**
 * An open event of an address claimed from (migration 0011): SQLite indexes open events only for
 * the addresses that use claims, and the first claim on an address indexes it (`indexForClaims`).
 * Naming claim_indexed lets SQLite use the partial index events_open.
 */
const SQLITE_OPEN = `claim_indexed = 1 AND ${OPEN}`;

/** The writer's record of which addresses have their open events indexed (sqlite-queue-counters.ts). */
export interface ClaimsIndexState {
  /** Whether the address's open events are indexed; null when the address does not exist. */
  indexed(addressId: string): boolean | null;
  /** After the transaction that indexed the address committed. */
  markIndexed(addressId: string): void;
}

export class SqliteClaims {
  private readonly statements = new Map<string, Database.Statement<unknown[], unknown>>();

  constructor(
    private readonly db: Database.Database,
    /** The first sequence not yet durable on the address (MAX_SAFE_INTEGER when all are). */
    private readonly visibleBelow: (addressId: string) => number,
    private readonly index: ClaimsIndexState,
  ) {}

  private stmt<R>(sql: string): Database.Statement<unknown[], R> {
    let s = this.statements.get(sql);
    if (s === undefined) {
      if (this.statements.size >= STATEMENTS) this.statements.delete(this.statements.keys().next().value as string);
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s as Database.Statement<unknown[], R>;
  }

  /** One transaction; null when the address does not exist. */
  claim(addressId: string, r: ClaimRequest): ClaimBatch | null {
    let indexedNow = false;
    const batch = this.db
      .transaction((): ClaimBatch | null => {
        // The row, not the writer's counters: an operator's delete of the address may not have been seen yet.
        if (!this.stmt<{ one: number }>('SELECT 1 AS one FROM addresses WHERE id = ?').get(addressId)) return null;
        const indexed = this.index.indexed(addressId);
        if (indexed === null) return null;
        if (!indexed) {
          // The first claim on this address: its open events enter events_open (at most
          // MAX_EVENTS_PER_ADDRESS rows, once), and every later event of it as it is inserted.
          this.stmt(`UPDATE events SET claim_indexed = 1 WHERE address_id = ? AND ${OPEN}`).run(addressId);
          this.stmt('UPDATE addresses SET claims_indexed = 1 WHERE id = ?').run(addressId);
          indexedNow = true;
        }
        const below = this.visibleBelow(addressId);
        const d = new SqlParams('sqlite');
        const dA = d.add(addressId);
        const dNow = d.add(r.now);
        const died = this.stmt(`UPDATE events SET dead_at = ${dNow}, dead_reason = ${EXPIRED_REASON}
        WHERE address_id = ${dA} AND ${SQLITE_OPEN} AND ${finalLeaseOver(dNow)}`).run(...d.bound()).changes;
        // A filtered claim examines one window of open events after its cursor (CLAIM_WINDOW_EVENTS).
        let window: ClaimWindow | undefined;
        if (!isEmptyFilter(r.filter)) {
          const w = new SqlParams('sqlite');
          const windowSql = claimWindowSql({
            address: w.add(addressId),
            after: w.add(r.after),
            below: w.add(below),
            events: CLAIM_WINDOW_EVENTS,
            bytes: CLAIM_WINDOW_BYTES,
            // octet_length reads a row's size without its content (overflow pages): a window of large
            // events costs their sizes, not their bytes. The same count as jsonBytesSql.
            jsonBytes: 'octet_length(data) + ifnull(octet_length(metadata), 0)',
            open: SQLITE_OPEN,
          });
          window = toClaimWindow(this.stmt<ClaimWindowRow>(windowSql).get(...w.bound()), r.after);
        }
        const p = new SqlParams('sqlite');
        const a = p.add(addressId);
        const now = p.add(r.now);
        // The window, and any event before it that was leased before and is claimable again (nacked, or
        // its lease ran out): the window already examined the others, and an event's JSON never changes.
        const range =
          window === undefined
            ? ''
            : ` AND ((sequence > ${p.add(r.after)} AND sequence <= ${p.add(window.examinedTo)}) OR (sequence <= ${p.add(r.after)} AND delivery_count > 0))`;
        const set = leaseAssignments({ now, leaseMs: p.add(r.leaseMs), nonce: p.add(r.nonce), maxDeliveries: p.add(r.maxDeliveries) });
        const sql = `UPDATE events SET ${set} WHERE address_id = ${a} AND sequence IN (
          SELECT sequence FROM events WHERE address_id = ${a} AND ${SQLITE_OPEN} AND sequence < ${p.add(below)}${range} AND ${claimable(now)}
            AND ${filterSql(r.filter, p)}
          ORDER BY sequence LIMIT ${p.add(r.max)})
        RETURNING ${SETTLED_COLUMNS}, lease_id`;
        const rows = this.stmt<ClaimedRow>(sql).all(...p.bound());
        rows.sort((x, y) => Number(x.sequence) - Number(y.sequence));
        const claims = rows.map((row) => ({ event: toEvent(row), leaseId: row.lease_id, leaseExpiresAt: Number(row.lease_expires_at) }));
        let nextChangeAt: number | null = null;
        if (claims.length === 0) {
          const n = new SqlParams('sqlite');
          const next = this.stmt<{ next_change: number | null }>(nextChangeSql(n.add(addressId), n.add(r.now), SQLITE_OPEN)).get(...n.bound());
          nextChangeAt = next?.next_change ?? null;
        }
        return window === undefined ? { claims, nextChangeAt, died } : { claims, nextChangeAt, died, window };
      })
      .immediate();
    if (indexedNow) this.index.markIndexed(addressId);
    return batch;
  }

  settle(addressId: string, eventId: string, leaseId: string, s: Settlement, now: number): SettleResult {
    const p = new SqlParams('sqlite');
    const set = settleSet(p, s, now);
    const row = this.stmt<SettledRow>(`UPDATE events SET ${set} WHERE ${settleWhere(p, addressId, eventId, leaseId, s)} RETURNING ${SETTLED_COLUMNS}`).get(
      ...p.bound(),
    );
    if (row) return { outcome: 'settled', event: toEvent(row), leaseExpiresAt: row.lease_expires_at === null ? null : Number(row.lease_expires_at) };
    const q = new SqlParams('sqlite');
    const state = this.stmt<LeaseStateRow>(leaseStateSql(q, addressId, eventId)).get(...q.bound());
    if (!state) return { outcome: 'not_found' };
    return { outcome: 'lease_lost', why: leaseLostReason(toLeaseState(state), leaseId, s.kind) };
  }
}
