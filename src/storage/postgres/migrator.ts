// Applies the numbered SQL files of ./migrations, safely when several instances start at once.
//
// One dedicated connection holds a session advisory lock for the whole run, so runners queue up
// instead of racing; the second one finds everything recorded and does nothing. Each migration
// runs in its own transaction that first records its version in schema_migrations (primary key):
// a migration is applied and recorded together, or neither. A crash releases the lock with the
// connection. A database that has recorded a migration number above this release's highest is
// refused (SchemaTooNewError) before anything is applied.
import pg from 'pg';
import { type Log, SILENT_LOG } from '../../domain/ports.js';
import { assertSchemaNotNewer, readMigrations } from '../migration-files.js';

/** Any fixed key works; advisory locks are scoped to the current database. */
const MIGRATION_LOCK_KEY = '7262006001';

export async function runMigrations(clientConfig: pg.ClientConfig, dir: string, log: Log = SILENT_LOG): Promise<void> {
  const migrations = readMigrations(dir);
  // Not from the pool: DDL may take longer than the pool's statement_timeout, and waiting for
  // the lock must not be cut short by it either.
  const client = new pg.Client({ ...clientConfig, statement_timeout: false, application_name: 'return-address-migrate' });
  client.on('error', () => {}); // a query in flight rejects anyway
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version    INTEGER     PRIMARY KEY,
        name       TEXT        NOT NULL,
        applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`);
      const { rows } = await client.query<{ version: number; name: string }>('SELECT version, name FROM schema_migrations');
      const applied = new Map(rows.map((r) => [r.version, r.name]));
      assertSchemaNotNewer('PostgreSQL', applied, migrations);
      for (const m of migrations) {
        if (applied.has(m.version)) continue;
        const started = performance.now();
        await client.query('BEGIN');
        try {
          await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
          await client.query(m.sql);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch(() => {});
          throw new Error(`PostgreSQL migration ${m.name} failed`, { cause: err });
        }
        log.info({ migration: m.name, version: m.version, ms: Math.round(performance.now() - started) }, 'applied PostgreSQL migration');
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => {});
    }
  } finally {
    await client.end().catch(() => {});
  }
}
