// Row `pg`: ingest into two service instances on one fresh PostgreSQL database (bench/ingest.ts measures).

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ingestScenario } from './ingest.js';
import type { Child } from './processes.js';
import { api, createAddress, createAddresses, JSON_HEADERS, log, PG_ADMIN_URL, rows, startService, WEBHOOK } from './setup.js';

export async function pgScenario(ceiling: Child): Promise<void> {
  const label = 'PostgreSQL ingest, 2 instances, 100 addresses';
  const name = `ra_bench_${randomBytes(5).toString('hex')}`;
  const adminUrl = new URL(PG_ADMIN_URL);
  const dbUrl = new URL(PG_ADMIN_URL);
  dbUrl.pathname = `/${name}`;
  const skip = (reason: string) => {
    log(`${label}: skipped: ${reason}`);
    rows.push({ key: 'pg', label, unit: 'req/s', target: 'reported', met: null, note: `skipped: ${reason}` });
  };
  const admin = new pg.Client({ connectionString: adminUrl.toString() });
  try {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
  } catch (err) {
    await admin.end().catch(() => {});
    return skip(`no PostgreSQL at ${adminUrl.host} (${(err as Error).message})`);
  }
  const dirs = [mkdtempSync(join(os.tmpdir(), 'ra-bench-pg-')), mkdtempSync(join(os.tmpdir(), 'ra-bench-pg-'))];
  const instances: Child[] = [];
  try {
    try {
      for (const d of dirs) instances.push(await startService(d, { DATABASE_URL: dbUrl.toString(), PG_POOL_SIZE: '10' }, []));
      const probe = await createAddress((instances[0] as Child).url);
      const r = await api((instances[1] as Child).url + probe.inboxPath, { method: 'POST', body: WEBHOOK, headers: JSON_HEADERS });
      if (r.status !== 202) throw new Error(`a delivery through the second instance answered ${r.status}`);
    } catch (err) {
      return skip(`the PostgreSQL store is not functional yet: ${(err as Error).message.split('\n')[0]}`);
    }
    const addrs = await createAddresses((instances[0] as Child).url, 100);
    await ingestScenario('pg', label, ceiling, instances, addrs, (instances[1] as Child).url);
  } finally {
    await Promise.all(instances.map((i) => i.stop()));
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    await admin.end().catch(() => {});
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}
