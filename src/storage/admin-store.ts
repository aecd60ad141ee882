// The operator's view of a store, opened directly (no network surface): `return-address admin` and
// `return-address backup` (design.md, "Operating a public instance"). This file holds what both
// backends answer (the AdminStore port, its records, the bulk-delete condition); the backends read the
// same tables the service writes, beside a running service, with the stores' own SQL and counter
// rules: sqlite/sqlite-admin.ts and postgres/postgres-admin.ts; open-admin-store.ts picks one.

/** The migration that added what these commands read (created_ip; on SQLite, claims_indexed of the counters' rule). */
export const NEEDS_MIGRATION = { sqlite: 11, postgres: 10 } as const;

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
export const BULK_DELETE_BATCH = 200;

export function bulkWhere(match: BulkMatch, param: (i: number) => string): { sql: string; values: (string | number)[] } {
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

export const iso = (ms: unknown) => new Date(Number(ms)).toISOString();

/** A schema older than what the admin commands read: the fix is to start the service of this release once. */
export function tooOld(where: string, version: number, needs: number): AdminError {
  return new AdminError(`the store at ${where} is at schema version ${version}; start the service of this release once to migrate it to ${needs} or later`);
}
