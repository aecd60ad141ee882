// The operator's view of a PostgreSQL store (admin-store.ts), on a connection of its own beside the
// running instances. A delete is the store's own (postgres-addresses.ts): it NOTIFYs like the
// service's, so every instance ends its waits on the address with 404 (the PostgreSQL store keeps
// no address cache). The counters are the addresses' rows, which every append keeps exact.
import pg from 'pg';
import {
  type AddressSummary,
  AdminError,
  type AdminStore,
  BULK_DELETE_BATCH,
  type BulkMatch,
  bulkWhere,
  iso,
  type ListOptions,
  NEEDS_MIGRATION,
  type StoreStats,
  tooOld,
} from '../admin-store.js';
import { PostgresAddresses } from './postgres-addresses.js';
import { CHANGE_CHANNEL } from './postgres-store.js';

interface SummaryRow {
  id: string;
  slug: string;
  name: string;
  task_id: string | null;
  created_at: string;
  expires_at: string;
  created_ip: string | null;
  event_count: string;
  event_bytes: string;
  last_sequence: string;
  acked: string;
}

// Acknowledged events per address come from the partial index events_acknowledged (address_id, sequence).
const SUMMARY_COLUMNS = `a.id, a.slug, a.name, a.task_id, a.created_at, a.expires_at, a.created_ip, a.event_count, a.event_bytes, a.last_sequence,
  (SELECT count(*) FROM events e WHERE e.address_id = a.id AND e.acknowledged_at IS NOT NULL) AS acked`;

const toSummary = (r: SummaryRow): AddressSummary => ({
  id: r.id,
  slug: r.slug,
  name: r.name,
  task_id: r.task_id,
  created_at: iso(r.created_at),
  expires_at: iso(r.expires_at),
  created_ip: r.created_ip,
  events: Number(r.event_count),
  unacknowledged: Number(r.event_count) - Number(r.acked),
  bytes: Number(r.event_bytes),
  last_sequence: Number(r.last_sequence),
});

export class PostgresAdmin implements AdminStore {
  readonly kind = 'postgres' as const;
  private readonly addresses: PostgresAddresses;

  private constructor(
    readonly location: string,
    /** One connection: the admin's statements run one after another. */
    private readonly pool: pg.Pool,
  ) {
    this.addresses = new PostgresAddresses(pool, CHANGE_CHANNEL);
  }

  static async open(url: string): Promise<PostgresAdmin> {
    const shown = (() => {
      const u = new URL(url);
      u.password = '';
      return u.toString();
    })();
    const pool = new pg.Pool({ connectionString: url, application_name: 'return-address-admin', connectionTimeoutMillis: 10_000, max: 1 });
    pool.on('error', () => {}); // an idle connection lost: the next query opens another, or fails with its own error
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (err) {
      await pool.end();
      throw new AdminError(`cannot reach the store at ${shown}: ${(err as Error).message}`);
    }
    let version: number;
    try {
      const r = await client.query<{ version: number | null }>('SELECT max(version) AS version FROM schema_migrations');
      version = r.rows[0]?.version ?? 0;
      client.release();
    } catch (err) {
      client.release(true);
      await pool.end();
      throw new AdminError(`${shown} is not a Return Address store: ${(err as Error).message}`);
    }
    if (version < NEEDS_MIGRATION.postgres) {
      await pool.end();
      throw tooOld(shown, version, NEEDS_MIGRATION.postgres);
    }
    return new PostgresAdmin(shown, pool);
  }

  async list({ limit, ip }: ListOptions): Promise<AddressSummary[]> {
    const r =
      ip === undefined
        ? await this.pool.query<SummaryRow>(`SELECT ${SUMMARY_COLUMNS} FROM addresses a ORDER BY a.created_at DESC, a.id LIMIT $1`, [limit])
        : await this.pool.query<SummaryRow>(`SELECT ${SUMMARY_COLUMNS} FROM addresses a WHERE a.created_ip = $1 ORDER BY a.created_at DESC, a.id LIMIT $2`, [
            ip,
            limit,
          ]);
    return r.rows.map(toSummary);
  }

  async show(id: string): Promise<AddressSummary | null> {
    const r = await this.pool.query<SummaryRow>(`SELECT ${SUMMARY_COLUMNS} FROM addresses a WHERE a.id = $1`, [id]);
    return r.rows[0] ? toSummary(r.rows[0]) : null;
  }

  /** The service's own delete: the NOTIFY reaches every instance at commit, ending waits with 404. */
  delete(id: string): Promise<boolean> {
    return this.addresses.delete(id);
  }

  async deleteMatching(match: BulkMatch, dryRun: boolean): Promise<number> {
    const { sql, values } = bulkWhere(match, (i) => `$${i}`);
    if (dryRun) {
      const r = await this.pool.query<{ n: string }>(`SELECT count(*) AS n FROM addresses WHERE ${sql}`, values);
      return Number(r.rows[0]?.n ?? 0);
    }
    let deleted = 0;
    for (;;) {
      // As delete(): each deleted address NOTIFYs, so every instance ends its waits on it.
      const r = await this.pool.query(
        `WITH gone AS (DELETE FROM addresses WHERE id IN (SELECT id FROM addresses WHERE ${sql} LIMIT ${BULK_DELETE_BATCH}) RETURNING id)
         SELECT pg_notify($${values.length + 1}, id) FROM gone`,
        [...values, CHANGE_CHANNEL],
      );
      const n = r.rowCount ?? 0;
      deleted += n;
      if (n < BULK_DELETE_BATCH) return deleted;
    }
  }

  async stats(now: number): Promise<StoreStats> {
    const r = await this.pool.query<{ addresses: string; expired: string; events: string; bytes: string; unacked: string; oldest: string | null }>(
      `SELECT count(*) AS addresses, count(*) FILTER (WHERE expires_at <= $1) AS expired, coalesce(sum(event_count), 0) AS events,
              coalesce(sum(event_bytes), 0) AS bytes,
              (SELECT count(*) FROM events WHERE acknowledged_at IS NULL) AS unacked,
              (SELECT min(created_at) FROM events WHERE acknowledged_at IS NULL) AS oldest
       FROM addresses`,
      [now],
    );
    const t = r.rows[0]!;
    const top = await this.pool.query<{ created_ip: string | null; addresses: string }>(
      'SELECT created_ip, count(*) AS addresses FROM addresses GROUP BY created_ip ORDER BY count(*) DESC, created_ip LIMIT 10',
    );
    return {
      store: 'postgres',
      location: this.location,
      addresses: Number(t.addresses),
      addresses_expired: Number(t.expired),
      events: Number(t.events),
      unacknowledged: Number(t.unacked),
      event_bytes: Number(t.bytes),
      oldest_unacknowledged_at: t.oldest === null ? null : iso(t.oldest),
      top_creators: top.rows.map((row) => ({ created_ip: row.created_ip, addresses: Number(row.addresses) })),
    };
  }

  async backup(): Promise<{ bytes: number }> {
    throw new AdminError(
      'backup copies the SQLite file; on PostgreSQL use pg_dump (e.g. pg_dump --format=custom --file=FILE "$DATABASE_URL"), which takes a consistent snapshot while the service runs',
    );
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
