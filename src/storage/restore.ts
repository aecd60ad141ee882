// `return-address restore` (design.md, "Store epoch"): puts a backup back in place of the store,
// with the service stopped, and gives the store a new epoch so that every reader notices that
// sequences may have been reused and re-reads from the start.
//
// SQLite: refused while any process has the database open (a connection of a WAL database holds a
// shared lock on the file for as long as it is open, so an exclusive lock proves nobody does); the
// backup is checked, copied beside the store as a private file (0600), given a new epoch, and renamed
// over the store while that exclusive lock is still held; the old WAL goes with the old file.
// PostgreSQL: restoring is pg_restore's job; `--new-epoch` then only replaces the epoch.
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, copyFileSync, existsSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { Config } from '../config.js';
import { AdminError } from './admin-store.js';
import { SQLITE_FILE } from './open-store.js';

export const newEpoch = () => randomBytes(16).toString('hex');

const IN_USE = 'is in use (the service, or another process, has it open): stop the service first, then restore';

/** Restores `backupFile` over the SQLite store under `dataDir`; the new epoch. */
export function restoreSqlite(dataDir: string, backupFile: string): { epoch: string; bytes: number } {
  const target = join(resolve(dataDir), SQLITE_FILE);
  const source = resolve(backupFile);
  if (!existsSync(source)) throw new AdminError(`${source} does not exist`);
  if (source === target) throw new AdminError('the backup is the store itself: give the backup file');
  checkBackup(source);

  // Held until the new file is in place: a service starting meanwhile waits or fails, never opens the old one half-replaced.
  let lock: Database.Database | undefined;
  if (existsSync(target)) {
    lock = new Database(target, { timeout: 0 });
    try {
      lock.pragma('locking_mode = EXCLUSIVE');
      lock.exec('BEGIN EXCLUSIVE');
      lock.prepare('SELECT count(*) FROM sqlite_master').get();
    } catch (err) {
      lock.close();
      if ((err as { code?: string }).code === 'SQLITE_BUSY') throw new AdminError(`${target} ${IN_USE}`);
      throw err;
    }
  }
  const staging = `${target}.restore-${randomBytes(6).toString('hex')}`;
  try {
    closeSync(openSync(staging, 'wx', 0o600));
    copyFileSync(source, staging);
    chmodSync(staging, 0o600);
    const epoch = newEpoch();
    const db = new Database(staging);
    try {
      // A backup older than the epoch gets one from migration 0018 when the service starts: new as well.
      const has = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'store_epoch'").get();
      if (has) db.prepare('UPDATE store_epoch SET epoch = ? WHERE id = 1').run(epoch);
      db.pragma('journal_mode = DELETE'); // no WAL of its own beside it: the file is whole
    } finally {
      db.close();
    }
    renameSync(staging, target);
    // The old file's WAL and index must not be applied to the new one.
    for (const suffix of ['-wal', '-shm']) rmSync(`${target}${suffix}`, { force: true });
    return { epoch, bytes: statSync(target).size };
  } catch (err) {
    rmSync(staging, { force: true });
    throw err;
  } finally {
    if (lock) {
      try {
        lock.exec('ROLLBACK');
      } catch {}
      lock.close();
      // Closing the old connection may have written its WAL beside the new file again.
      for (const suffix of ['-wal', '-shm']) rmSync(`${target}${suffix}`, { force: true });
    }
  }
}

/** The backup is a database of this service, whole. */
function checkBackup(file: string): void {
  let db: Database.Database;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw new AdminError(`${file} is not a SQLite database: ${(err as Error).message}`);
  }
  try {
    const ok = db.pragma('quick_check', { simple: true });
    if (ok !== 'ok') throw new AdminError(`${file} is damaged (quick_check: ${String(ok)})`);
    const ours = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
    if (!ours) throw new AdminError(`${file} is not a Return Address backup (no schema_migrations table)`);
  } catch (err) {
    if (err instanceof AdminError) throw err;
    throw new AdminError(`${file} cannot be read as a database: ${(err as Error).message}`);
  } finally {
    db.close();
  }
}

/** PostgreSQL after a pg_restore: a new epoch (the instances read it at start). */
export async function newPostgresEpoch(config: Config): Promise<string> {
  const client = new pg.Client({ connectionString: config.databaseUrl });
  await client.connect();
  try {
    const epoch = newEpoch();
    const r = await client.query('UPDATE store_epoch SET epoch = $1 WHERE id = 1', [epoch]);
    if (r.rowCount !== 1) throw new AdminError('this database has no store epoch yet: start the service once (it migrates), then run this again');
    return epoch;
  } finally {
    await client.end();
  }
}
