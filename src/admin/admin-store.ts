// The operator's view of a store, opened directly (no network surface): `return-address admin` and
// `return-address backup` (design.md, "Operating a public instance"). It reads the same tables the service writes, beside a
// running service:
// - SQLite: a second connection on the file (WAL lets it read while the service writes; a delete
//   waits up to busy_timeout for the service's write lock). The running service notices the commit
//   through PRAGMA data_version on its next cache lookup, drops its caches and wakes its waiters
//   (sqlite-store.ts checkExternalChanges), so a deleted address is not served again.
// - PostgreSQL: the delete NOTIFYs like the service's own, so every instance ends its waits on it;
//   the PostgreSQL store keeps no address cache.

import { chmodSync, closeSync, existsSync, openSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { Config } from '../config.js';
import { SQLITE_FILE } from '../storage/open-store.js';
import { CHANGE_CHANNEL } from '../storage/postgres/postgres-store.js';
import { storedBytesSql } from '../storage/stored-bytes-sql.js';

/** The migration that added what these commands read (created_ip). */
const NEEDS_MIGRATION = 10;

export class AdminError extends Error {
  override name = 'AdminError';
}

export interface AddressSummary {
  id: string;
  slug: string;
  name: string;
  task_id: string | null;
  created_at: string;
  expires_at: string;
  created_ip: string | null;
  events: number;
  unacknowledged: number;
  bytes: number;
  last_sequence: number;
}

export interface StoreStats {
  store: 'sqlite' | 'postgres';
  location: string;
  addresses: number;
  addresses_expired: number;
  events: number;
  unacknowledged: number;
  event_bytes: number;
  oldest_unacknowledged_at: string | null;
  /** SQLite: the file's size and its free pages (reclaimed by the incremental vacuum). */
  file_bytes?: number;
  free_bytes?: number;
  top_creators: { created_ip: string | null; addresses: number }[];
}

export interface ListOptions {
  limit: number;
  ip?: string | undefined;
}

/** Which addresses a bulk delete takes: all conditions given must hold (at least one is). */
export interface BulkMatch {
  /** The creating client's IP as stored (created_ip, an IPv6 client as its prefix): any of these. */
  ips?: string[] | undefined;
  /** Created strictly before this time (epoch ms). */
  createdBefore?: number | undefined;
}

/** Addresses a bulk delete removes per statement: each batch is one short write, so the service's own writes interleave. */
const BULK_DELETE_BATCH = 200;

function bulkWhere(match: BulkMatch, param: (i: number) => string): { sql: string; values: (string | number)[] } {
  const parts: string[] = [];
  const values: (string | number)[] = [];
  if (match.ips !== undefined) {
    const marks: string[] = [];
    for (const ip of match.ips) {
      values.push(ip);
      marks.push(param(values.length));
    }
    parts.push(`created_ip IN (${marks.join(', ')})`);
  }
  if (match.createdBefore !== undefined) {
    values.push(match.createdBefore);
    parts.push(`created_at < ${param(values.length)}`);
  }
  if (parts.length === 0) throw new AdminError('a bulk delete needs --ip or --created-before');
  return { sql: parts.join(' AND '), values };
}

export interface AdminStore {
  readonly kind: 'sqlite' | 'postgres';
  readonly location: string;
  list(opts: ListOptions): Promise<AddressSummary[]>;
  show(id: string): Promise<AddressSummary | null>;
  /** Deletes the address and its events; false when there is none. */
  delete(id: string): Promise<boolean>;
  /** How many addresses match; with `dryRun` false, deletes them (and their events) in batches and says how many went. */
  deleteMatching(match: BulkMatch, dryRun: boolean): Promise<number>;
  stats(now: number): Promise<StoreStats>;
  /** SQLite's online backup to `file`; PostgreSQL refuses (use pg_dump). */
  backup(file: string): Promise<{ bytes: number }>;
  close(): Promise<void>;
}

const iso = (ms: unknown) => new Date(Number(ms)).toISOString();

interface SummaryRow {
  id: string;
  slug: string;
  name: string;
  task_id: string | null;
  created_at: number | string;
  expires_at: number | string;
  created_ip: string | null;
  event_count: number | string;
  event_bytes: number | string;
  last_sequence: number | string;
  acked: number | string;
}

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

// Acknowledged events per address come from the partial index events_acknowledged (address_id, sequence).
const SUMMARY_COLUMNS = `a.id, a.slug, a.name, a.task_id, a.created_at, a.expires_at, a.created_ip, a.event_count, a.event_bytes, a.last_sequence,
  (SELECT count(*) FROM events e WHERE e.address_id = a.id AND e.acknowledged_at IS NOT NULL) AS acked`;
// A running SQLite service writes its counters to the addresses row lazily: the row counts the
// events up to its last_sequence, and the events above it are added here (src/storage/sqlite/sqlite-queue-counters.ts).
const SQLITE_EVENT_BYTES = storedBytesSql('sqlite', 'e');
const SQLITE_SUMMARY_COLUMNS = `a.id, a.slug, a.name, a.task_id, a.created_at, a.expires_at, a.created_ip,
  a.event_count + (SELECT count(*) FROM events e WHERE e.address_id = a.id AND e.sequence > a.last_sequence) AS event_count,
  a.event_bytes + (SELECT ifnull(sum(${SQLITE_EVENT_BYTES}), 0) FROM events e WHERE e.address_id = a.id AND e.sequence > a.last_sequence) AS event_bytes,
  max(a.last_sequence, ifnull((SELECT max(e.sequence) FROM events e WHERE e.address_id = a.id), 0)) AS last_sequence,
  (SELECT count(*) FROM events e WHERE e.address_id = a.id AND e.acknowledged_at IS NOT NULL) AS acked`;

export async function openAdminStore(config: Config): Promise<AdminStore> {
  if (config.databaseUrl !== undefined) return PostgresAdmin.open(config.databaseUrl);
  return SqliteAdmin.open(join(resolve(config.dataDir), SQLITE_FILE));
}

class SqliteAdmin implements AdminStore {
  readonly kind = 'sqlite' as const;
  private constructor(
    readonly location: string,
    private readonly db: Database.Database,
  ) {}

  static open(path: string): SqliteAdmin {
    if (!existsSync(path)) {
      throw new AdminError(`no store at ${path}: set DATA_DIR to the service's data directory (or DATABASE_URL for PostgreSQL)`);
    }
    const db = new Database(path, { fileMustExist: true });
    try {
      db.pragma('foreign_keys = ON'); // a delete takes the address's events with it (ON DELETE CASCADE)
      db.pragma('busy_timeout = 5000');
      db.pragma('synchronous = FULL'); // this connection's commits are durable on their own
      const version = db.prepare<[], number | null>('SELECT max(version) FROM schema_migrations').pluck().get();
      if ((version ?? 0) < NEEDS_MIGRATION) {
        throw new AdminError(
          `the store at ${path} is at schema version ${version ?? 0}; start the service of this release once to migrate it to ${NEEDS_MIGRATION} or later`,
        );
      }
    } catch (err) {
      db.close();
      if (err instanceof AdminError) throw err;
      throw new AdminError(`${path} is not a Return Address store: ${(err as Error).message}`);
    }
    return new SqliteAdmin(path, db);
  }

  async list({ limit, ip }: ListOptions): Promise<AddressSummary[]> {
    const rows =
      ip === undefined
        ? this.db.prepare<[number], SummaryRow>(`SELECT ${SQLITE_SUMMARY_COLUMNS} FROM addresses a ORDER BY a.created_at DESC, a.id LIMIT ?`).all(limit)
        : this.db
            .prepare<[string, number], SummaryRow>(
              `SELECT ${SQLITE_SUMMARY_COLUMNS} FROM addresses a WHERE a.created_ip = ? ORDER BY a.created_at DESC, a.id LIMIT ?`,
            )
            .all(ip, limit);
    return rows.map(toSummary);
  }

  async show(id: string): Promise<AddressSummary | null> {
    const r = this.db.prepare<[string], SummaryRow>(`SELECT ${SQLITE_SUMMARY_COLUMNS} FROM addresses a WHERE a.id = ?`).get(id);
    return r ? toSummary(r) : null;
  }

  async delete(id: string): Promise<boolean> {
    return this.db.prepare<[string]>('DELETE FROM addresses WHERE id = ?').run(id).changes > 0;
  }

  async deleteMatching(match: BulkMatch, dryRun: boolean): Promise<number> {
    const { sql, values } = bulkWhere(match, () => '?');
    if (dryRun)
      return (
        this.db
          .prepare<unknown[], number>(`SELECT count(*) FROM addresses WHERE ${sql}`)
          .pluck()
          .get(...values) ?? 0
      );
    const batch = this.db.prepare(`DELETE FROM addresses WHERE id IN (SELECT id FROM addresses WHERE ${sql} LIMIT ${BULK_DELETE_BATCH})`);
    let deleted = 0;
    for (;;) {
      const n = batch.run(...values).changes;
      deleted += n;
      if (n < BULK_DELETE_BATCH) return deleted;
    }
  }

  async stats(now: number): Promise<StoreStats> {
    const t = this.db
      .prepare<[number], { addresses: number; expired: number; events: number; bytes: number }>(
        'SELECT count(*) AS addresses, count(*) FILTER (WHERE expires_at <= ?) AS expired, ifnull(sum(event_count), 0) AS events, ifnull(sum(event_bytes), 0) AS bytes FROM addresses',
      )
      .get(now)!;
    // The events above each row's last_sequence, which the rows do not count yet (SQLITE_SUMMARY_COLUMNS).
    const ahead = this.db
      .prepare<[], { n: number; bytes: number }>(
        `SELECT count(*) AS n, ifnull(sum(${SQLITE_EVENT_BYTES}), 0) AS bytes FROM events e JOIN addresses a ON a.id = e.address_id WHERE e.sequence > a.last_sequence`,
      )
      .get()!;
    t.events += ahead.n;
    t.bytes += ahead.bytes;
    const unacked = this.db.prepare<[], number>('SELECT count(*) FROM events WHERE acknowledged_at IS NULL').pluck().get() as number;
    const oldest = this.db.prepare<[], number | null>('SELECT min(created_at) FROM events WHERE acknowledged_at IS NULL').pluck().get() ?? null;
    const pageSize = this.db.pragma('page_size', { simple: true }) as number;
    const free = this.db.pragma('freelist_count', { simple: true }) as number;
    const top = this.db
      .prepare<[], { created_ip: string | null; addresses: number }>(
        'SELECT created_ip, count(*) AS addresses FROM addresses GROUP BY created_ip ORDER BY addresses DESC, created_ip LIMIT 10',
      )
      .all();
    return {
      store: 'sqlite',
      location: this.location,
      addresses: t.addresses,
      addresses_expired: t.expired,
      events: t.events,
      unacknowledged: unacked,
      event_bytes: t.bytes,
      oldest_unacknowledged_at: oldest === null ? null : iso(oldest),
      file_bytes: statSync(this.location).size + (existsSync(`${this.location}-wal`) ? statSync(`${this.location}-wal`).size : 0),
      free_bytes: free * pageSize,
      top_creators: top,
    };
  }

  async backup(file: string): Promise<{ bytes: number }> {
    // The copy holds every event, so it is created private (0600, like the store's own file)
    // before SQLite writes a byte into it: an empty file is an empty database to SQLite, which
    // keeps the file's mode; 'wx' also refuses an existing file without a race.
    try {
      closeSync(openSync(file, 'wx', 0o600));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new AdminError(`${file} exists: choose a new file (a backup never overwrites one)`);
      throw new AdminError(`cannot create ${file}: ${(err as Error).message}`);
    }
    chmodSync(file, 0o600); // whatever the umask took away, nothing more than the owner's
    // SQLite's online backup API: page by page, restarting if the service writes in between, so
    // the copy is one consistent snapshot and the service keeps running.
    await this.db.backup(file);
    return { bytes: statSync(file).size };
  }

  async close(): Promise<void> {
    this.db.close();
  }
}

class PostgresAdmin implements AdminStore {
  readonly kind = 'postgres' as const;
  private constructor(
    readonly location: string,
    private readonly client: pg.Client,
  ) {}

  static async open(url: string): Promise<PostgresAdmin> {
    const client = new pg.Client({ connectionString: url, application_name: 'return-address-admin', connectionTimeoutMillis: 10_000 });
    const shown = (() => {
      const u = new URL(url);
      u.password = '';
      return u.toString();
    })();
    try {
      await client.connect();
    } catch (err) {
      throw new AdminError(`cannot reach the store at ${shown}: ${(err as Error).message}`);
    }
    try {
      const r = await client.query<{ version: number | null }>('SELECT max(version) AS version FROM schema_migrations');
      const version = r.rows[0]?.version ?? 0;
      if (version < NEEDS_MIGRATION) {
        throw new AdminError(
          `the store at ${shown} is at schema version ${version}; start the service of this release once to migrate it to ${NEEDS_MIGRATION} or later`,
        );
      }
    } catch (err) {
      await client.end();
      if (err instanceof AdminError) throw err;
      throw new AdminError(`${shown} is not a Return Address store: ${(err as Error).message}`);
    }
    return new PostgresAdmin(shown, client);
  }

  async list({ limit, ip }: ListOptions): Promise<AddressSummary[]> {
    const r =
      ip === undefined
        ? await this.client.query<SummaryRow>(`SELECT ${SUMMARY_COLUMNS} FROM addresses a ORDER BY a.created_at DESC, a.id LIMIT $1`, [limit])
        : await this.client.query<SummaryRow>(`SELECT ${SUMMARY_COLUMNS} FROM addresses a WHERE a.created_ip = $1 ORDER BY a.created_at DESC, a.id LIMIT $2`, [
            ip,
            limit,
          ]);
    return r.rows.map(toSummary);
  }

  async show(id: string): Promise<AddressSummary | null> {
    const r = await this.client.query<SummaryRow>(`SELECT ${SUMMARY_COLUMNS} FROM addresses a WHERE a.id = $1`, [id]);
    return r.rows[0] ? toSummary(r.rows[0]) : null;
  }

  async delete(id: string): Promise<boolean> {
    // As the service deletes: the NOTIFY reaches every instance at commit, ending waits with 404.
    const r = await this.client.query('WITH gone AS (DELETE FROM addresses WHERE id = $1 RETURNING id) SELECT pg_notify($2, id) FROM gone', [
      id,
      CHANGE_CHANNEL,
    ]);
    return r.rowCount === 1;
  }

  async deleteMatching(match: BulkMatch, dryRun: boolean): Promise<number> {
    const { sql, values } = bulkWhere(match, (i) => `$${i}`);
    if (dryRun) {
      const r = await this.client.query<{ n: string }>(`SELECT count(*) AS n FROM addresses WHERE ${sql}`, values);
      return Number(r.rows[0]?.n ?? 0);
    }
    let deleted = 0;
    for (;;) {
      // As delete(): each deleted address NOTIFYs, so every instance ends its waits on it.
      const r = await this.client.query(
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
    const r = await this.client.query<{ addresses: string; expired: string; events: string; bytes: string; unacked: string; oldest: string | null }>(
      `SELECT count(*) AS addresses, count(*) FILTER (WHERE expires_at <= $1) AS expired, coalesce(sum(event_count), 0) AS events,
              coalesce(sum(event_bytes), 0) AS bytes,
              (SELECT count(*) FROM events WHERE acknowledged_at IS NULL) AS unacked,
              (SELECT min(created_at) FROM events WHERE acknowledged_at IS NULL) AS oldest
       FROM addresses`,
      [now],
    );
    const t = r.rows[0]!;
    const top = await this.client.query<{ created_ip: string | null; addresses: string }>(
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
    await this.client.end();
  }
}
