// Shared by the operations tests: the store's own counters against its rows, read directly.

import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { SQLITE_FILE } from '../../src/storage/open-store.js';
import type { TestStorage } from '../helpers.js';

export interface CounterCheck {
  id: string;
  event_count: number;
  event_bytes: number;
  rows: number;
  row_bytes: number;
}

/**
 * Every address's event_count/event_bytes beside what its event rows (and the bytes stored beside them) add up to.
 * SQLite's service writes its counters to the row lazily, and the row must count exactly the events up to
 * its last_sequence: the counters are the row plus the events above it, which is what this adds.
 */
export async function countersAgainstRows(storage: TestStorage): Promise<CounterCheck[]> {
  const sql = (bytes: string, ahead: (what: string) => string) => `SELECT a.id, a.event_count${ahead('count(*)')} AS event_count,
      a.event_bytes${ahead(`coalesce(sum(${bytes}), 0)`)} AS event_bytes,
      (SELECT count(*) FROM events e WHERE e.address_id = a.id) AS rows,
      (SELECT coalesce(sum(${bytes}), 0) FROM events e WHERE e.address_id = a.id) AS row_bytes
    FROM addresses a ORDER BY a.id`;
  if (storage.databaseUrl === undefined) {
    const db = new Database(join(storage.dataDir, SQLITE_FILE), { readonly: true, fileMustExist: true });
    try {
      const ahead = (what: string) => ` + (SELECT ${what} FROM events e WHERE e.address_id = a.id AND e.sequence > a.last_sequence)`;
      return db.prepare<[], CounterCheck>(sql('length(CAST(e.data AS BLOB)) + ifnull(length(CAST(e.metadata AS BLOB)), 0) + e.blob_bytes', ahead)).all();
    } finally {
      db.close();
    }
  }
  const c = new pg.Client({ connectionString: storage.databaseUrl });
  await c.connect();
  try {
    const r = await c.query(sql('octet_length(e.data) + coalesce(octet_length(e.metadata), 0) + e.blob_bytes', () => ''));
    return r.rows.map((row) => ({
      id: row.id,
      event_count: Number(row.event_count),
      event_bytes: Number(row.event_bytes),
      rows: Number(row.rows),
      row_bytes: Number(row.row_bytes),
    }));
  } finally {
    await c.end();
  }
}

/** One sample's value from Prometheus text, by its name and exact label set (undefined when absent). */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got: Record<string, string> = {};
    for (const pair of (m[3] ?? '').match(/[a-zA-Z_]+="[^"]*"/g) ?? []) {
      const i = pair.indexOf('=');
      got[pair.slice(0, i)] = pair.slice(i + 2, -1);
    }
    const keys = Object.keys(labels);
    if (keys.length !== Object.keys(got).length || keys.some((k) => got[k] !== labels[k])) continue;
    return Number(m[4]);
  }
  return undefined;
}
