// Row `retention`: bench/retention.ts's scenario run on SQLite, then on a fresh PostgreSQL database.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Child } from './processes.js';
import { postgresTarget, retentionScenario, sqliteTarget } from './retention.js';
import { createAddresses, log, PG_ADMIN_URL, rows, startService } from './setup.js';

/** Delivery latency while retention deletes 100,000 acknowledged events (bench/retention.ts), on each store. */
export async function retentionScenarios(): Promise<void> {
  const addresses = async (service: Child, n: number) => (await createAddresses(service.url, n)).map((a) => ({ id: a.id, inboxPath: a.inboxPath }));
  const dir = mkdtempSync(join(os.tmpdir(), 'ra-bench-retention-'));
  try {
    if (process.env.BENCH_RETENTION_STORE !== 'postgres')
      rows.push(
        await retentionScenario(
          'Delivery p99 while retention deletes 100,000 events (SQLite)',
          'retention_sqlite',
          sqliteTarget(dir),
          (env) => startService(dir, env),
          addresses,
          log,
        ),
      );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  if (process.env.BENCH_RETENTION_STORE === 'sqlite') return;
  const name = `ra_bench_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  try {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
  } catch (err) {
    await admin.end().catch(() => {});
    rows.push({
      key: 'retention_pg',
      label: 'Delivery p99 while retention deletes 100,000 events (PostgreSQL)',
      unit: 'ms',
      target: 'reported',
      met: null,
      note: `skipped: ${(err as Error).message}`,
    });
    return;
  }
  const dbUrl = new URL(PG_ADMIN_URL);
  dbUrl.pathname = `/${name}`;
  const pgDir = mkdtempSync(join(os.tmpdir(), 'ra-bench-retention-pg-'));
  try {
    const target = await postgresTarget(dbUrl.toString());
    rows.push(
      await retentionScenario(
        'Delivery p99 while retention deletes 100,000 events (PostgreSQL)',
        'retention_pg',
        target,
        (env) => startService(pgDir, { DATABASE_URL: dbUrl.toString(), ...env }, []),
        addresses,
        log,
      ),
    );
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    await admin.end().catch(() => {});
    rmSync(pgDir, { recursive: true, force: true });
  }
}
