// The SQLite store's prepared statements, made once against the migrated schema, and what every
// collaborator of the store is given through its constructor (SqliteParts): the connection, these
// statements, the queue counters, the caches and the store's two hooks (durable, forget).
import type Database from 'better-sqlite3';
import { APPROVAL_COLUMNS, type ApprovalAnswerRow, type ApprovalRow } from '../approval-rows.js';
import {
  ADDRESS_COLUMNS,
  type AddressRow,
  boundedPageSql,
  EVENT_COLUMNS,
  EVENT_ID_TIME_SQL,
  type EventRow,
  INSERTED_EVENT_COLUMNS,
  releaseSql,
} from '../rows.js';
import { jsonBytesSql, storedBytesSql } from '../stored-bytes-sql.js';
import type { EventVisibility } from './event-visibility.js';
import type { SqliteQueueCounters } from './sqlite-queue-counters.js';
import type { SqliteReadCache } from './sqlite-read-cache.js';

/** The bytes an event row holds in the address's byte quota (domain/queue-quota.ts, storedBytes). */
export const STORED_BYTES_SQL = storedBytesSql('sqlite');
/** An address's acknowledged events, oldest first, with their stored bytes: what pruning may delete. */
export const ACKED_SIZES_SQL = `SELECT sequence, ${STORED_BYTES_SQL} AS bytes
  FROM events WHERE address_id = ? AND acknowledged_at IS NOT NULL ORDER BY sequence`;

export type SqliteStatements = ReturnType<typeof prepareStatements>;

/** What the SQLite store's collaborators share: one connection, one writer (sqlite-store.ts). */
export interface SqliteParts {
  readonly db: Database.Database;
  readonly q: SqliteStatements;
  /** Each address's last sequence, events and bytes (sqlite-queue-counters.ts). */
  readonly counters: SqliteQueueCounters;
  /** Address rows and pages of events (sqlite-read-cache.ts). */
  readonly cache: SqliteReadCache;
  /** Which committed events are durable, hence visible to readers (event-visibility.ts). */
  readonly visibility: EventVisibility;
  /** Resolves once every write committed so far is on disk. */
  durable(): Promise<void>;
  /** The address's rows changed (or it is gone): forget what is cached about it. */
  forget(addressId: string, deleted?: boolean): void;
  /** close() was called: no more writes. */
  isClosed(): boolean;
}

/** Every statement the store runs more than once, prepared against the final schema. */
export function prepareStatements(db: Database.Database) {
  return {
    getAddress: db.prepare<[string], AddressRow>(`SELECT ${ADDRESS_COLUMNS} FROM addresses WHERE id = ?`),
    getAddressBySlug: db.prepare<[string], AddressRow>(`SELECT ${ADDRESS_COLUMNS} FROM addresses WHERE slug = ?`),
    addressExists: db.prepare<[string], { one: number }>('SELECT 1 AS one FROM addresses WHERE id = ?'),
    insertAddress: db.prepare(
      `INSERT INTO addresses (${ADDRESS_COLUMNS}, created_ip)
       VALUES (@id, @slug, @name, @taskId, @readTokenHash, @inboxSecretHash, @signingKeys, @createdAt, @expiresAt, @createdIp)`,
    ),
    // Retention: the oldest acknowledged events first, by the partial index on acknowledged_at (migration 0010).
    acknowledgedDue: db.prepare<[number, number], { rowid: number; address_id: string }>(
      'SELECT rowid, address_id FROM events WHERE acknowledged_at IS NOT NULL AND acknowledged_at < ? ORDER BY acknowledged_at LIMIT ?',
    ),
    deleteEventRow: db.prepare<[number], { address_id: string; bytes: number }>(
      `DELETE FROM events WHERE rowid = ? RETURNING address_id, ${STORED_BYTES_SQL} AS bytes`,
    ),
    freePages: db.prepare<[], number>('PRAGMA freelist_count').pluck(),
    deleteAddress: db.prepare<[string]>('DELETE FROM addresses WHERE id = ?'),
    signingSecrets: db.prepare<[string], { signing_secrets: Buffer | null }>('SELECT signing_secrets FROM addresses WHERE id = ?'),
    setSigningSecrets: db.prepare<[Buffer | null, string]>('UPDATE addresses SET signing_secrets = ? WHERE id = ?'),
    expiredIds: db.prepare<[number, number], { id: string }>('SELECT id FROM addresses WHERE expires_at < ? ORDER BY expires_at LIMIT ?'),
    rateWindow: db.prepare<[string], { window_start: number; count: number }>('SELECT window_start, count FROM rate_windows WHERE key = ?'),
    upsertRateWindow: db.prepare<[string, number, number]>(
      `INSERT INTO rate_windows (key, window_start, count) VALUES (?, ?, ?)
       ON CONFLICT (key) DO UPDATE SET window_start = excluded.window_start, count = excluded.count`,
    ),
    pruneRateWindows: db.prepare<[number]>('DELETE FROM rate_windows WHERE window_start < ?'),
    eventByKey: db.prepare<[string, string], EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE address_id = ? AND dedupe_key = ?`),
    ackedSizes: db.prepare<[string], { sequence: number; bytes: number }>(ACKED_SIZES_SQL),
    pruneAckedUpTo: db.prepare<[string, number]>('DELETE FROM events WHERE address_id = ? AND acknowledged_at IS NOT NULL AND sequence <= ?'),
    // Positional parameters: binding by name from an object costs more per event (bench/README.md).
    insertEvent: db.prepare<[string, string, number, string, string, string, string | null, string | null, string, number, number | null, number | null]>(
      `INSERT INTO events (${INSERTED_EVENT_COLUMNS}, claim_indexed, quarantined_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)`,
    ),
    setBlobBytes: db.prepare<[number, string, number]>('UPDATE events SET blob_bytes = ? WHERE address_id = ? AND sequence = ?'),
    insertBlob: db.prepare<[string, number, string, string, string, number, Uint8Array]>(
      'INSERT INTO event_blobs (address_id, sequence, name, content_type, sha256, size, bytes) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ),
    blob: db.prepare<[string, string, string, string], { sequence: number; content_type: string; sha256: string; size: number }>(
      `SELECT b.sequence, b.content_type, b.sha256, b.size FROM events e
       JOIN event_blobs b ON b.address_id = e.address_id AND b.sequence = e.sequence
       WHERE ${EVENT_ID_TIME_SQL.replace('id', 'e.id')} = substr(?, 10, 9) AND e.id = ? AND e.address_id = ? AND b.name = ?`,
    ),
    blobChunk: db.prepare<[number, number, string, number, string], { chunk: Buffer }>(
      'SELECT substr(bytes, ?, ?) AS chunk FROM event_blobs WHERE address_id = ? AND sequence = ? AND name = ?',
    ),
    page: db.prepare<[string, number, number, number, number], EventRow & { fetched: number }>(
      boundedPageSql(jsonBytesSql('sqlite'), {
        address: '?',
        after: '?',
        below: '?',
        limit: '?',
        budget: '?',
      }),
    ),
    // The event id is bound twice: its time part leads the index on ids (EVENT_ID_TIME_SQL).
    insertApproval: db.prepare(
      `INSERT INTO approvals (${APPROVAL_COLUMNS}) VALUES (${APPROVAL_COLUMNS.split(',')
        .map(() => '?')
        .join(', ')})`,
    ),
    pendingApprovals: db.prepare<[string], { n: number }>("SELECT count(*) AS n FROM approvals WHERE address_id = ? AND status = 'pending'"),
    approval: db.prepare<[string], ApprovalRow>(`SELECT ${APPROVAL_COLUMNS} FROM approvals WHERE id = ?`),
    approvalAnswers: db.prepare<[string], ApprovalAnswerRow>('SELECT n, event_id, answer FROM approval_answers WHERE approval_id = ? ORDER BY n'),
    dueApprovals: db.prepare<[number, number], ApprovalRow>(
      `SELECT ${APPROVAL_COLUMNS} FROM approvals WHERE status = 'pending' AND expires_at <= ? ORDER BY expires_at LIMIT ?`,
    ),
    closeApproval: db.prepare<[string, number | null, number, string]>('UPDATE approvals SET status = ?, closed_at = ?, responses = ? WHERE id = ?'),
    insertAnswer: db.prepare<[string, number, string, string]>('INSERT INTO approval_answers (approval_id, n, event_id, answer) VALUES (?, ?, ?, ?)'),
    ack: db.prepare<[number, string, string, string], EventRow>(
      `UPDATE events SET acknowledged_at = COALESCE(acknowledged_at, ?)
       WHERE ${EVENT_ID_TIME_SQL} = substr(?, 10, 9) AND id = ? AND address_id = ? RETURNING ${EVENT_COLUMNS}`,
    ),
    release: db.prepare<[number, string, string, string], EventRow>(releaseSql('sqlite')),
  };
}
