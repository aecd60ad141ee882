// Two instances on one PostgreSQL database, run as processes: exactly one delivers a subscription
// (its lease); kill -9 that one in the middle of a stream of events, and the other takes the
// subscription over once the lease runs out and delivers everything: no event lost, order kept,
// an event delivered twice only across the takeover (at-least-once).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { api, createTestStorage, onlyPostgres, type SpawnedService, spawnService, type TestStorage } from '../helpers.js';
import { startReceiver, until } from './receiver.js';

describe('push subscriptions across two instances (postgres)', {
  skip: onlyPostgres && 'needs STORE=postgres: two instances share one database only on PostgreSQL',
}, () => {
  let storage: TestStorage | undefined;
  const procs: SpawnedService[] = [];
  after(async () => {
    for (const p of procs) if (p.proc.exitCode === null && p.proc.signalCode === null) p.proc.kill('SIGTERM');
    await Promise.all(procs.map((p) => p.exited));
    await storage?.drop();
  });

  it('kill -9 of the delivering instance: the other takes over within seconds and nothing is lost', { timeout: 110_000 }, async () => {
    storage = await createTestStorage();
    const env = {
      PUSH_ALLOW_PRIVATE: 'true',
      PUSH_SEAL_KEY: randomBytes(32).toString('base64'),
      PUSH_LEASE_MS: '1500',
      PUSH_SWEEP_MS: '200',
      PUSH_RETRY_SCHEDULE_MS: Array(20).fill('100').join(','),
      LOG_LEVEL: 'warn',
    };
    procs.push(await spawnService(env, storage));
    procs.push(await spawnService(env, storage));
    // Each answer takes 150 ms, so the kill falls in the middle of the stream, an attempt in flight.
    const rx = await startReceiver(undefined, 0, 150);
    try {
      const [one, two] = procs as [SpawnedService, SpawnedService];
      const created = await api(one.baseUrl, 'POST', '/api/v1/addresses', { json: {} });
      const id = created.json.address.id as string;
      const token = created.json.credentials.read_token as string;
      const inbox = new URL(created.json.endpoints.inbox_url as string).pathname;
      const sub = await api(one.baseUrl, 'POST', `/api/v1/addresses/${id}/subscriptions`, { json: { url: rx.url }, token });
      assert.equal(sub.status, 201, sub.text);
      const send = async (n: number) => assert.equal((await api(one.baseUrl, 'POST', inbox, { json: { data: { n } } })).status, 202);
      for (let n = 1; n <= 10; n++) await send(n);
      await until(() => rx.received.length >= 4, 20_000, 'the first events delivered');

      const db = new pg.Client({ connectionString: storage.databaseUrl });
      await db.connect();
      let owner: string;
      try {
        owner = (await db.query<{ lease_owner: string }>('SELECT lease_owner FROM subscriptions')).rows[0]!.lease_owner;
      } finally {
        await db.end();
      }
      const pid = Number(owner.split(':')[1]);
      const victim = procs.find((p) => p.proc.pid === pid);
      assert.ok(victim, `the lease names one of the two instances (${owner})`);
      const survivor = victim === one ? two : one;
      victim.proc.kill('SIGKILL');
      await victim.exited;

      const killedAt = Date.now();
      for (let n = 11; n <= 20; n++) assert.equal((await api(survivor.baseUrl, 'POST', inbox, { json: { data: { n } } })).status, 202);
      await until(() => new Set(rx.received.map((d) => d.event.sequence)).size >= 20, 30_000, 'all 20 after the takeover');
      const takeoverMs = Date.now() - killedAt;
      const seqs = rx.received.map((d) => d.event.sequence);
      const firsts = seqs.filter((s, i) => seqs.indexOf(s) === i);
      assert.deepEqual(
        firsts,
        Array.from({ length: 20 }, (_, i) => i + 1),
        'each event first arrives in order',
      );
      assert.ok(seqs.length - 20 <= 1, `at most the event in flight at the kill came twice: ${seqs.join(',')}`);
      assert.ok(takeoverMs < 15_000, `taken over within seconds (${takeoverMs} ms, lease 1.5 s)`);
      const shown = await api(survivor.baseUrl, 'GET', `/api/v1/addresses/${id}/subscriptions/${sub.json.id}`, { token });
      await until(
        async () => (await api(survivor.baseUrl, 'GET', `/api/v1/addresses/${id}/subscriptions/${sub.json.id}`, { token })).json.cursor === 20,
        5000,
        'cursor 20',
      );
      assert.equal(shown.json.state, 'active');
    } finally {
      await rx.close();
    }
  });
});
