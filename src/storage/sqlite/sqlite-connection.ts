// Opening the SQLite store's one connection: the file kept private, WAL, incremental auto-vacuum,
// foreign keys, and the migrations (sqlite-migrations.ts) run before any statement is prepared.
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { Log } from '../../domain/ports.js';
import { migrateSqlite } from './sqlite-migrations.js';

/**
 * The database holds hashes, sealed secrets and every event: readable by this user only. A new
 * DATA_DIR is created 0700 and the database file 0600 before SQLite opens it; SQLite creates its WAL
 * and shared-memory files with the database file's mode. An existing file is narrowed to 0600.
 */
function keepPrivate(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  closeSync(openSync(path, 'a', 0o600));
  for (const f of [path, `${path}-wal`, `${path}-shm`]) if (existsSync(f)) chmodSync(f, 0o600);
}

/** The store's connection, migrated; synchronous=FULL until the group commit takes the fdatasyncs over (sqlite-durability.ts). */
export function openSqliteDatabase(path: string, log: Log): Database.Database {
  if (path !== ':memory:') keepPrivate(path);
  const db = new Database(path);
  // Space freed by deletions (retention, expiry) can be given back to the file system a few pages
  // at a time (reclaimSpace), without a full VACUUM's long exclusive lock. auto_vacuum only takes
  // effect on a database that has no table yet: a file created before this stays as it was
  // (its free pages are reused by new rows; a one-time VACUUM, service stopped, converts it).
  db.pragma('auto_vacuum = INCREMENTAL');
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  try {
    migrateSqlite(db, log);
  } catch (err) {
    db.close(); // a refused or failed migration leaves no handle on the file
    throw err;
  }
  return db;
}
