// Secrets at rest and in logs (design.md, "Identifiers and secrets"): after ordinary traffic, neither the database nor
// the log holds a read token or an inbox secret in clear, and no endpoint repeats them.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import pg from 'pg';
import { type Addr, api, createAddress, createTestStorage, deliver, listEvents, STORE, spawnService } from '../helpers.js';

describe('secrets', () => {
  it('never appear in clear in the database or the logs, and no endpoint repeats them', async () => {
    const storage = await createTestStorage();
    const svc = await spawnService({ LOG_LEVEL: 'info' }, storage);
    try {
      const addrs: Addr[] = [];
      for (let i = 0; i < 3; i++) addrs.push(await createAddress(svc.baseUrl));
      for (const a of addrs) {
        const d = await deliver(svc.baseUrl, a, { data: 'hello' }, `k-${a.id}`);
        const reads = [
          d,
          await listEvents(svc.baseUrl, a),
          await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}`, { token: a.token }),
          await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/events/${d.json.event.id}/ack`, { token: a.token }),
          await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}`, { headers: { authorization: `Bearer ${a.token}x` } }),
          await api(svc.baseUrl, 'POST', `${svc.baseUrl}/api/v1/inbox/${a.id}/${a.secret}x`, { json: {} }),
        ];
        for (const r of reads) assert.ok(!r.text.includes(a.token) && !r.text.includes(a.secret), `a response repeated a secret: ${r.text.slice(0, 200)}`);
      }
      // Let the log lines of the last requests reach the pipe.
      await new Promise((r) => setTimeout(r, 200));
      const log = svc.output();
      assert.ok(log.includes('/api/v1/inbox/'), 'inbox requests are logged');
      assert.ok(log.includes('[REDACTED]'), 'with the secret redacted');
      for (const a of addrs) {
        assert.ok(!log.includes(a.token), 'the read token is not in the log');
        assert.ok(!log.includes(a.secret.slice('aa_ingress_'.length)), 'the inbox secret is not in the log');
      }

      let stored: string;
      if (STORE === 'sqlite') {
        svc.proc.kill('SIGTERM');
        await svc.exited;
        stored = readdirSync(storage.dataDir)
          .map((f) => readFileSync(join(storage.dataDir, f)).toString('latin1'))
          .join('\n');
        assert.ok(stored.includes(addrs[0]!.id), 'the scan reads the database files');
      } else {
        const c = new pg.Client({ connectionString: storage.databaseUrl });
        await c.connect();
        const rows = await c.query(
          "SELECT string_agg(t::text, E'\\n') AS dump FROM (SELECT a::text AS t FROM addresses a UNION ALL SELECT e::text FROM events e) s",
        );
        await c.end();
        stored = rows.rows[0].dump as string;
        assert.ok(stored.includes(addrs[0]!.id));
      }
      for (const a of addrs) {
        for (const secret of [a.token, a.secret, a.token.slice(8), a.secret.slice(11)]) {
          assert.ok(!stored.includes(secret), 'a secret is stored in clear');
        }
      }
    } finally {
      if (svc.proc.exitCode === null) {
        svc.proc.kill('SIGTERM');
        await svc.exited;
      }
      await storage.drop();
    }
  });
});
