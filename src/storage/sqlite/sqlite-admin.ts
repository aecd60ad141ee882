// The operator's view of a SQLite store (admin-store.ts), on a second connection to the file beside a
// running service: WAL lets it read while the service writes; a delete waits up to busy_timeout for
// the service's write lock. The running service notices the commit through PRAGMA data_version on
// its next cache lookup, drops its caches and wakes its waiters (sqlite-read-cache.ts), so a deleted
// address is not served again. A running service writes its counters to the addresses row lazily;
// the counts here follow the store's own rule (sqlite-queue-counters.ts, SqliteCountersReader), and
// this connection never writes a counter.
import { chmodSync, closeSync, existsSync, openSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
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
import { SqliteCountersReader } from './sqlite-queue-counters.js';
import { STORED_BYTES_SQL } from './sqlite-statements.js';

interface AddressRow {
  id: string;
  slug: string;
  name: string;
  task_id: string | null;
  created_at: number;
  expires_at: number;
  created_ip: string | null;
  acked: number;
}

// Acknowledged events per address come from the partial index events_acknowledged (address_id, sequence).
const ADDRESS_COLUMNS = `a.id, a.slug, a.name, a.task_id, a.created_at, a.expires_at, a.created_ip,
  (SELECT count(*) FROM events e WHERE e.address_id = a.id AND e.acknowledged_at IS NOT NULL) AS acked`;

export class SqliteAdmin implements AdminStore {
  readonly kind = 'sqlite' as const;
  private readonly counters: SqliteCountersReader;

  private constructor(
    readonly location: string,
    private readonly db: Database.Database,
  ) {
    this.counters = new SqliteCountersReader(db, STORED_BYTES_SQL);
  }

  static open(path: string): SqliteAdmin {
    if (!existsSync(path)) {
      throw new AdminError(`no store at ${path}: set DATA_DIR to the service's data directory (or DATABASE_URL for PostgreSQL)`);
    }
    const db = new Database(path, { fileMustExist: true });
    try {
      db.pragma('foreign_keys = ON'); // a delete takes the address's events with it (ON DELETE CASCADE)
      db.pragma('busy_timeout = 5000');
      db.pragma('synchronous = FULL'); // this connection's commits are durable on their own
      const version = db.prepare<[], number | null>('SELECT max(version) FROM schema_migrations').pluck().get() ?? 0;
      if (version < NEEDS_MIGRATION.sqlite) throw tooOld(path, version, NEEDS_MIGRATION.sqlite);
      return new SqliteAdmin(path, db);
    } catch (err) {
      db.close();
      if (err instanceof AdminError) throw err;
      throw new AdminError(`${path} is not a Return Address store: ${(err as Error).message}`);
    }
  }

  /** The row's fields with the counters by the store's rule, in one read transaction (a consistent snapshot). */
  private summaries(rows: () => AddressRow[]): AddressSummary[] {
    return this.db.transaction(() =>
      rows().flatMap((r) => {
        const c = this.counters.read(r.id);
        if (!c) return [];
        return [
          {
            id: r.id,
            slug: r.slug,
            name: r.name,
            task_id: r.task_id,
            created_at: iso(r.created_at),
            expires_at: iso(r.expires_at),
            created_ip: r.created_ip,
            events: c.eventCount,
            unacknowledged: c.eventCount - r.acked,
            bytes: c.eventBytes,
            last_sequence: c.lastSequence,
          },
        ];
      }),
    )();
  }

  async list({ limit, ip }: ListOptions): Promise<AddressSummary[]> {
    return this.summaries(() =>
      ip === undefined
        ? this.db.prepare<[number], AddressRow>(`SELECT ${ADDRESS_COLUMNS} FROM addresses a ORDER BY a.created_at DESC, a.id LIMIT ?`).all(limit)
        : this.db
            .prepare<[string, number], AddressRow>(`SELECT ${ADDRESS_COLUMNS} FROM addresses a WHERE a.created_ip = ? ORDER BY a.created_at DESC, a.id LIMIT ?`)
            .all(ip, limit),
    );
  }

  async show(id: string): Promise<AddressSummary | null> {
    return this.summaries(() => this.db.prepare<[string], AddressRow>(`SELECT ${ADDRESS_COLUMNS} FROM addresses a WHERE a.id = ?`).all(id))[0] ?? null;
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
    const { t, totals, unacked, oldest, top } = this.db.transaction(() => ({
      t: this.db
        .prepare<[number], { addresses: number; expired: number }>(
          'SELECT count(*) AS addresses, count(*) FILTER (WHERE expires_at <= ?) AS expired FROM addresses',
        )
        .get(now)!,
      totals: this.counters.totals(),
      unacked: this.db.prepare<[], number>('SELECT count(*) FROM events WHERE acknowledged_at IS NULL').pluck().get() as number,
      oldest: this.db.prepare<[], number | null>('SELECT min(created_at) FROM events WHERE acknowledged_at IS NULL').pluck().get() ?? null,
      top: this.db
        .prepare<[], { created_ip: string | null; addresses: number }>(
          'SELECT created_ip, count(*) AS addresses FROM addresses GROUP BY created_ip ORDER BY addresses DESC, created_ip LIMIT 10',
        )
        .all(),
    }))();
    const pageSize = this.db.pragma('page_size', { simple: true }) as number;
    const free = this.db.pragma('freelist_count', { simple: true }) as number;
    return {
      store: 'sqlite',
      location: this.location,
      addresses: t.addresses,
      addresses_expired: t.expired,
      events: totals.events,
      unacknowledged: unacked,
      event_bytes: totals.bytes,
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
