// The SQLite migration runner: numbered plain-SQL files in ./migrations, applied in order, each in
// its own transaction, each logged (docs/design.md, "Running it: start, signals, schema versions").
// It runs in SqliteStore's constructor, before any statement is prepared against the schema.

import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type Database from 'better-sqlite3';
import type { Log } from '../../domain/ports.js';
import { assertSchemaNotNewer, readMigrations } from '../migration-files.js';

const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'migrations');

/**
 * Applies every migration the database has not recorded; refuses a database migrated by a newer
 * release (assertSchemaNotNewer).
 */
export function migrateSqlite(db: Database.Database, log: Log): void {
  // The text is kept as SQLite stores it in sqlite_master (schema.sql, schema-snapshot.test.ts):
  // its indentation is part of the recorded schema.
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`);
  const applied = new Map(
    (db.prepare('SELECT version, name FROM schema_migrations').all() as { version: number; name: string }[]).map((r) => [r.version, r.name]),
  );
  const migrations = readMigrations(MIGRATIONS_DIR);
  assertSchemaNotNewer('SQLite', applied, migrations);
  for (const m of migrations) {
    if (applied.has(m.version)) continue;
    const started = performance.now();
    // Record first, inside the migration's own transaction: a second runner fails on the
    // primary key instead of applying the DDL twice.
    db.transaction(() => {
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(m.version, m.name, Date.now());
      db.exec(m.sql);
    }).immediate();
    log.info({ migration: m.name, version: m.version, ms: Math.round(performance.now() - started) }, 'applied SQLite migration');
  }
}
