// The PostgreSQL store's addresses: creation under the create limit's rate window (one row per key,
// shared by every instance), lookups, signing secrets, deletion and the expiry sweep. Deletions
// NOTIFY the change channel, so waits on every instance end with 404. All on the writes pool.
import type pg from 'pg';
import type { AddressRecord, RateDecision } from '../../domain/model.js';
import { retryAfterSeconds, staleRateWindowsBefore, windowStartOf } from '../../domain/rate-window.js';
import { ADDRESS_COLUMNS, type AddressRow, toAddress } from '../rows.js';

type Rate = { key: string; limit: number; windowMs: number; now: number };

export class PostgresAddresses {
  constructor(
    private readonly pool: pg.Pool,
    /** The NOTIFY channel of address changes (postgres-store.ts, CHANGE_CHANNEL). */
    private readonly channel: string,
  ) {}

  async create(a: AddressRecord, rate: Rate): Promise<RateDecision> {
    const windowStart = windowStartOf(rate.now, rate.windowMs);
    // One statement, so one atomic step: count the attempt in the window row (locked by the
    // upsert, shared by every instance) and insert the address only if the count was allowed.
    // A refused attempt updates nothing and inserts nothing. The rule is domain/rate-window.ts's
    // countAttempt: a later window resets the count; an earlier one (a lagging clock on another
    // instance) counts against the stored window.
    const r = await this.pool.query(
      `WITH counted AS (
         INSERT INTO rate_windows AS w (key, window_start, count) VALUES ($1, $2, 1)
         ON CONFLICT (key) DO UPDATE
           SET window_start = GREATEST(w.window_start, EXCLUDED.window_start),
               count = CASE WHEN EXCLUDED.window_start > w.window_start THEN 1 ELSE w.count + 1 END
           WHERE EXCLUDED.window_start > w.window_start OR w.count < $3::bigint
         RETURNING 1
       )
       INSERT INTO addresses (${ADDRESS_COLUMNS}, created_ip)
       SELECT $4::text, $5::text, $6::text, $7::text, $8::bytea, $9::bytea, $10::bytea, $11::bigint, $12::bigint, $13::text FROM counted`,
      [
        rate.key,
        windowStart,
        rate.limit,
        a.id,
        a.slug,
        a.name,
        a.taskId,
        a.readTokenHash,
        a.inboxSecretHash,
        a.signingKeys,
        a.createdAt,
        a.expiresAt,
        a.createdIp ?? null,
      ],
    );
    if (r.rowCount === 1) return { allowed: true };
    return this.refused(rate, windowStart);
  }

  async countRate(rate: Rate): Promise<RateDecision> {
    // The create limit's upsert (createAddress), alone: one row per key shared by every instance.
    const windowStart = windowStartOf(rate.now, rate.windowMs);
    const r = await this.pool.query(
      `INSERT INTO rate_windows AS w (key, window_start, count) VALUES ($1, $2, 1)
       ON CONFLICT (key) DO UPDATE
         SET window_start = GREATEST(w.window_start, EXCLUDED.window_start),
             count = CASE WHEN EXCLUDED.window_start > w.window_start THEN 1 ELSE w.count + 1 END
         WHERE EXCLUDED.window_start > w.window_start OR w.count < $3::bigint`,
      [rate.key, windowStart, rate.limit],
    );
    if (r.rowCount === 1) return { allowed: true };
    return this.refused(rate, windowStart);
  }

  async get(id: string): Promise<AddressRecord | null> {
    const r = await this.pool.query<AddressRow>(`SELECT ${ADDRESS_COLUMNS} FROM addresses WHERE id = $1`, [id]);
    return r.rows[0] ? toAddress(r.rows[0]) : null;
  }

  async bySlug(slug: string): Promise<AddressRecord | null> {
    const r = await this.pool.query<AddressRow>(`SELECT ${ADDRESS_COLUMNS} FROM addresses WHERE slug = $1`, [slug]);
    return r.rows[0] ? toAddress(r.rows[0]) : null;
  }

  async signingSecrets(addressId: string): Promise<Buffer | null | undefined> {
    const r = await this.pool.query<{ signing_secrets: Buffer | null }>('SELECT signing_secrets FROM addresses WHERE id = $1', [addressId]);
    return r.rows[0] === undefined ? undefined : r.rows[0].signing_secrets;
  }

  async setSigningSecrets(addressId: string, sealed: Buffer | null): Promise<boolean> {
    const r = await this.pool.query('UPDATE addresses SET signing_secrets = $1 WHERE id = $2', [sealed, addressId]);
    return r.rowCount === 1;
  }

  async delete(id: string): Promise<boolean> {
    // The events go by ON DELETE CASCADE; the NOTIFY is delivered at commit.
    const r = await this.pool.query(
      `WITH gone AS (DELETE FROM addresses WHERE id = $1 RETURNING id)
       SELECT pg_notify($2, id) FROM gone`,
      [id, this.channel],
    );
    return r.rowCount === 1;
  }

  async deleteExpired(cutoff: number, batchSize: number): Promise<string[]> {
    // SKIP LOCKED: concurrent sweepers on other instances take disjoint batches, and an address
    // locked by an append in progress is left for the next sweep instead of being waited on.
    const r = await this.pool.query<{ id: string }>(
      `WITH victims AS (
         SELECT id FROM addresses WHERE expires_at < $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED
       ), gone AS (
         DELETE FROM addresses a USING victims v WHERE a.id = v.id RETURNING a.id
       )
       SELECT id, pg_notify($3, id) FROM gone`,
      [cutoff, batchSize, this.channel],
    );
    await this.pool.query('DELETE FROM rate_windows WHERE window_start < $1', [staleRateWindowsBefore(cutoff)]);
    return r.rows.map((row) => row.id);
  }

  /** Refused: the wait runs to the end of the stored window, which a lagging clock's attempt did not open (one more read, on the rare refused path only). */
  private async refused(rate: Rate, windowStart: number): Promise<RateDecision> {
    const w = await this.pool.query<{ window_start: string }>('SELECT window_start FROM rate_windows WHERE key = $1', [rate.key]);
    const stored = Math.max(windowStart, Number(w.rows[0]?.window_start ?? windowStart));
    return { allowed: false, retryAfterSeconds: retryAfterSeconds(stored, rate.windowMs, rate.now) };
  }
}
