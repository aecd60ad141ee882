// /readyz reflects the database (design.md, "Running it"): 503 in the error shape while PostgreSQL
// refuses this service's connections, 200 again once it takes them, without a restart.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { api, onlyPostgres, PG_ADMIN_URL, sleep } from '../helpers.js';
import { type InjectedService, startInjectedService } from '../inject.js';

describe('readiness follows the database', { skip: onlyPostgres }, () => {
  let svc: InjectedService;
  let admin: pg.Client;
  let db: string;
  before(async () => {
    svc = await startInjectedService();
    db = new URL(svc.storage.databaseUrl!).pathname.slice(1);
    admin = new pg.Client({ connectionString: PG_ADMIN_URL });
    await admin.connect();
  });
  after(async () => {
    await admin.query(`ALTER DATABASE ${db} ALLOW_CONNECTIONS true`).catch(() => {});
    await admin.end();
    await svc.stop();
  });

  it('/readyz answers 503 while the database is unreachable and 200 when it is back', async () => {
    assert.equal((await api(svc.baseUrl, 'GET', '/readyz')).status, 200);
    await admin.query(`ALTER DATABASE ${db} ALLOW_CONNECTIONS false`);
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [db]);
    let down = await api(svc.baseUrl, 'GET', '/readyz');
    for (let i = 0; i < 50 && down.status === 200; i++) {
      await sleep(100);
      down = await api(svc.baseUrl, 'GET', '/readyz');
    }
    assert.equal(down.status, 503, down.text);
    assert.deepEqual(Object.keys(down.json.error).sort(), ['code', 'message']);
    assert.equal((await api(svc.baseUrl, 'GET', '/healthz')).status, 200, 'the process itself is still up');

    await admin.query(`ALTER DATABASE ${db} ALLOW_CONNECTIONS true`);
    let up = await api(svc.baseUrl, 'GET', '/readyz');
    for (let i = 0; i < 100 && up.status !== 200; i++) {
      await sleep(100);
      up = await api(svc.baseUrl, 'GET', '/readyz');
    }
    assert.equal(up.status, 200, up.text);
    // And it serves again.
    assert.equal((await api(svc.baseUrl, 'POST', '/api/v1/addresses')).status, 201);
  });
});
