// Two service instances on one PostgreSQL database behave as one service (design.md, "Durability: group commit"):
// gapless sequences and one event per idempotency key across instances, long-polls woken by a
// delivery through the other instance (LISTEN/NOTIFY), deletions ending waits elsewhere, no event
// missed while the LISTEN connection is down, and one provisioning rate limit for both. Each instance
// answers through inject (its app, store and LISTEN connection, no listener): what is under test is
// the database between them, not a socket.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import type { PostgresStore } from '../../src/storage/postgres/postgres-store.js';
import { api, createAddress, createTestStorage, deliver, listEvents, onlyPostgres, range, sleep, type TestStorage } from '../helpers.js';
import { type InjectedService, startInjectedService } from '../inject.js';

const seqs = (page: { json: { events: { sequence: number }[] } }) => page.json.events.map((e) => e.sequence);

/** Resolves once `svc` holds `n` open long-polls (the waiter is registered; a wake cannot be missed). */
async function waitersOn(svc: InjectedService, n: number): Promise<void> {
  const until = Date.now() + 20_000; // a bound for a waiter that never registers, not a speed claim
  while (svc.hub.size() !== n) {
    if (Date.now() > until) assert.fail(`expected ${n} waiting long-polls, have ${svc.hub.size()}`);
    await sleep(2);
  }
}

const pgStore = (svc: InjectedService) => svc.store as PostgresStore;

async function waitForListener(svc: InjectedService, predicate: (s: { state: string; listens: number }) => boolean, what: string): Promise<void> {
  const until = Date.now() + 10_000;
  for (;;) {
    const s = pgStore(svc).listenerStatus();
    if (s && predicate(s)) return;
    if (Date.now() > until) assert.fail(`listener never became ${what}: ${JSON.stringify(s)}`);
    await sleep(1);
  }
}

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;

describe('two instances on one PostgreSQL database', { skip: onlyPostgres }, () => {
  let storage: TestStorage;
  let a: InjectedService;
  let b: InjectedService;
  before(async () => {
    storage = await createTestStorage();
    // Started together: their migrations race on the fresh database.
    [a, b] = await Promise.all([startInjectedService({}, storage), startInjectedService({}, storage)]);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await storage?.drop();
  });

  it('alternating deliveries through A and B get sequences 1..40, readable in order on both', async () => {
    const addr = await createAddress(a.baseUrl);
    for (const i of range(1, 40)) {
      const via = i % 2 === 1 ? a : b;
      const r = await deliver(via.baseUrl, addr, { data: i });
      assert.equal(r.status, 202, r.text);
      assert.equal(r.json.event.sequence, i);
    }
    for (const svc of [a, b]) {
      const page = await listEvents(svc.baseUrl, addr, { limit: 100 });
      assert.deepEqual(seqs(page), range(1, 40));
      assert.deepEqual(
        page.json.events.map((e: { data: number }) => e.data),
        range(1, 40),
      );
    }
  });

  it('batches spanning many addresses on both instances all succeed, gapless per address', async () => {
    // Group commit puts deliveries to many addresses in one transaction on each instance; the two
    // instances' batches lock overlapping sets of address rows at the same time.
    const addrs = await Promise.all(range(1, 12).map(() => createAddress(a.baseUrl)));
    const res = await Promise.all(range(0, 479).map((i) => deliver((i % 2 ? a : b).baseUrl, addrs[(i * 7) % addrs.length]!, { data: i })));
    for (const r of res) assert.equal(r.status, 202, r.text);
    for (const addr of addrs) {
      const page = await listEvents(a.baseUrl, addr, { limit: 100 });
      assert.deepEqual(seqs(page), range(1, 40), 'each address gapless 1..40');
    }
  });

  it('200 parallel deliveries split across A and B are gapless 1..200 with distinct events', async () => {
    const addr = await createAddress(b.baseUrl);
    const res = await Promise.all(range(1, 200).map((i) => deliver((i % 2 ? a : b).baseUrl, addr, { data: i })));
    for (const r of res) assert.equal(r.status, 202, r.text);
    assert.deepEqual(
      res.map((r) => r.json.event.sequence as number).sort((x, y) => x - y),
      range(1, 200),
    );
    assert.equal(new Set(res.map((r) => r.json.event.id)).size, 200);
    const first = await listEvents(a.baseUrl, addr, { limit: 100 });
    const second = await listEvents(b.baseUrl, addr, { limit: 100, after: first.json.next_cursor });
    assert.deepEqual([...seqs(first), ...seqs(second)], range(1, 200));
    assert.equal(second.json.has_more, false);
    // Each caller got back the payload stored at its sequence.
    const stored = new Map([...first.json.events, ...second.json.events].map((e: { sequence: number; data: number }) => [e.sequence, e.data]));
    for (const r of res) assert.equal(stored.get(r.json.event.sequence), r.json.event.data);
  });

  it('parallel same-key deliveries across A and B create exactly one event; everyone gets it', async () => {
    for (const round of range(1, 3)) {
      const addr = await createAddress(a.baseUrl);
      const res = await Promise.all(range(1, 40).map((i) => deliver((i % 2 ? a : b).baseUrl, addr, { data: i }, `key-${round}`)));
      assert.deepEqual(res.map((r) => r.status).sort(), [...Array(39).fill(200), 202].sort(), res.map((r) => r.text).join('\n'));
      const created = res.find((r) => r.status === 202)!.json.event;
      for (const r of res) {
        assert.deepEqual(r.json.event, created);
        assert.equal(r.json.duplicate, r.status === 200);
      }
      const page = await listEvents(b.baseUrl, addr);
      assert.equal(page.json.events.length, 1);
      assert.equal(page.json.events[0].id, created.id);
      // The queue moves on normally after the duplicates: the next event is sequence 2.
      const next = await deliver(b.baseUrl, addr, {}, `other-${round}`);
      assert.equal(next.json.event.sequence, 2);
    }
  });

  it('a long-poll on B wakes promptly after a delivery through A', async (t) => {
    const latencies: number[] = [];
    const fromSend: number[] = [];
    for (const i of range(1, 10)) {
      const addr = await createAddress(a.baseUrl);
      const waiting = listEvents(b.baseUrl, addr, { wait: 20 }).then((r) => ({ r, at: performance.now() }));
      await waitersOn(b, 1);
      const sentAt = performance.now();
      const delivered = await deliver(a.baseUrl, addr, { data: i });
      const committedAt = performance.now();
      assert.equal(delivered.status, 202);
      const { r, at } = await waiting;
      assert.equal(r.status, 200);
      assert.deepEqual(seqs(r), [1]);
      assert.equal(r.json.events[0].id, delivered.json.event.id);
      latencies.push(at - committedAt);
      fromSend.push(at - sentAt);
    }
    const msg =
      `cross-instance wake latency after A's 202: median ${median(latencies).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms (n=${latencies.length}); ` +
      `from sending the delivery to B's answer: median ${median(fromSend).toFixed(1)} ms, max ${Math.max(...fromSend).toFixed(1)} ms`;
    t.diagnostic(msg);
    console.log(`# ${msg}`);
    // Loose bound (CI machines stall); the contract is "within milliseconds", measured above.
    assert.ok(Math.max(...latencies) < 2000, msg);
  });

  it('a filtered long-poll on B sleeps through non-matching deliveries through A and wakes promptly for a match', async () => {
    const addr = await createAddress(a.baseUrl);
    let answered = false;
    const waiting = listEvents(b.baseUrl, addr, { wait: 20, type: 'wanted' }).then((r) => {
      answered = true;
      return { r, at: performance.now() };
    });
    await waitersOn(b, 1);
    // B hears each through LISTEN and screens it: nothing for this filter, so the poll waits on.
    for (const i of range(1, 5)) assert.equal((await deliver(a.baseUrl, addr, { type: 'other', data: i })).status, 202);
    await sleep(300);
    assert.equal(answered, false, 'no non-matching delivery ended the wait');
    await waitersOn(b, 1);
    const delivered = await deliver(a.baseUrl, addr, { type: 'wanted' });
    const committedAt = performance.now();
    const { r, at } = await waiting;
    assert.equal(r.status, 200);
    assert.deepEqual(seqs(r), [6]);
    assert.equal(r.json.events[0].id, delivered.json.event.id);
    assert.equal(r.json.next_cursor, 6);
    console.log(`# a filtered long-poll on B answered ${(at - committedAt).toFixed(0)} ms after A's 202 for the match`);
    // The wait is 20 s: answering in under half of it is waking on the match, however busy the machine
    // (CI once took over the former 2 s bound beside the whole suite; the latency is measured above).
    assert.ok(at - committedAt < 10_000, `woken by the match through A (${(at - committedAt).toFixed(0)} ms), not by the timeout`);
    await waitersOn(b, 0);
  });

  it('deleting the address through A ends a long-poll on B with 404', async () => {
    const addr = await createAddress(a.baseUrl);
    const waiting = listEvents(b.baseUrl, addr, { wait: 20 });
    await waitersOn(b, 1);
    const del = await api(a.baseUrl, 'DELETE', `/api/v1/addresses/${addr.id}`, { token: addr.token });
    assert.equal(del.status, 204);
    const t0 = performance.now();
    const r = await waiting;
    assert.equal(r.status, 404);
    assert.equal(r.json.error.code, 'not_found');
    // The wait is 20 s: ending in under half of it is ending on the deletion, however busy the machine.
    assert.ok(performance.now() - t0 < 10_000, 'the wait ended on the deletion, not on its timeout');
    await waitersOn(b, 0);
  });

  it("an event committed while B's LISTEN connection is down still ends B's long-poll", async () => {
    const addr = await createAddress(a.baseUrl);
    await waitForListener(b, (s) => s.state === 'listening', 'listening');
    const listensBefore = pgStore(b).listenerStatus()!.listens;
    const waiting = listEvents(b.baseUrl, addr, { wait: 20 }).then((r) => ({ r, at: performance.now() }));
    await waitersOn(b, 1);

    const admin = new pg.Client({ connectionString: storage.databaseUrl });
    await admin.connect();
    try {
      const killed = await admin.query(
        `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
         WHERE datname = current_database() AND application_name = 'return-address-listener'`,
      );
      assert.equal(killed.rowCount, 2, 'one LISTEN connection per instance');
    } finally {
      await admin.end();
    }
    await waitForListener(b, (s) => s.state !== 'listening', 'disconnected');
    // Delivered through A while B cannot hear the NOTIFY: only the resync after B's re-LISTEN
    // can end the wait.
    const delivered = await deliver(a.baseUrl, addr, { data: 'while deaf' });
    assert.equal(delivered.status, 202);
    assert.notEqual(pgStore(b).listenerStatus()!.state, 'listening', 'the event was committed while B was not listening');
    const t0 = performance.now();

    const { r, at } = await waiting;
    assert.equal(r.status, 200);
    assert.deepEqual(seqs(r), [1], 'the waiter got the event delivered during the reconnect');
    assert.equal(r.json.events[0].id, delivered.json.event.id);
    assert.ok(at - t0 < 10_000, `woken by the resync after reconnecting (${(at - t0).toFixed(0)} ms), not by the 20 s timeout`);
    const after = pgStore(b).listenerStatus()!;
    assert.equal(after.state, 'listening');
    assert.equal(after.listens, listensBefore + 1, 'B listened again exactly once');

    // Notifications flow again after the reconnect: a new delivery through A wakes B at once.
    const again = listEvents(b.baseUrl, addr, { after: 1, wait: 20 });
    await waitersOn(b, 1);
    await deliver(a.baseUrl, addr, { data: 'after reconnect' });
    const r2 = await again;
    assert.deepEqual(seqs(r2), [2]);
    assert.ok(r2.ms < 5000);
  });

  it('both instances report ready', async () => {
    for (const svc of [a, b]) {
      const r = await api(svc.baseUrl, 'GET', '/readyz');
      assert.equal(r.status, 200, r.text);
    }
  });
});

describe('the provisioning rate limit is shared by two instances', { skip: onlyPostgres }, () => {
  let storage: TestStorage;
  let a: InjectedService;
  let b: InjectedService;
  const LIMIT = 6;
  before(async () => {
    storage = await createTestStorage();
    const env = { CREATE_RATE_LIMIT: String(LIMIT), CREATE_RATE_WINDOW_SECONDS: '3600' };
    a = await startInjectedService(env, storage);
    b = await startInjectedService(env, storage);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await storage?.drop();
  });

  it('parallel creations through A and B: exactly LIMIT succeed; refused ones neither count nor insert', async () => {
    const res = await Promise.all(range(1, 20).map((i) => api((i % 2 ? a : b).baseUrl, 'POST', '/api/v1/addresses')));
    const created = res.filter((r) => r.status === 201);
    const refused = res.filter((r) => r.status === 429);
    assert.equal(created.length, LIMIT, res.map((r) => `${r.status} ${r.text}`).join('\n'));
    assert.equal(refused.length, 20 - LIMIT);
    for (const r of refused) {
      assert.equal(r.json.error.code, 'rate_limited');
      assert.ok(Number(r.headers.get('retry-after')) >= 1);
    }
    // Refused on either instance, whichever served the allowed ones.
    for (const svc of [a, b]) assert.equal((await api(svc.baseUrl, 'POST', '/api/v1/addresses')).status, 429);

    const db = new pg.Client({ connectionString: storage.databaseUrl });
    await db.connect();
    try {
      const addrs = await db.query<{ n: string }>('SELECT count(*) AS n FROM addresses');
      assert.equal(Number(addrs.rows[0]!.n), LIMIT, 'refused attempts inserted nothing');
      const windows = await db.query<{ count: number }>('SELECT count FROM rate_windows');
      assert.deepEqual(
        windows.rows.map((w) => w.count),
        [LIMIT],
        'one shared window; refused attempts did not count',
      );
    } finally {
      await db.end();
    }
  });
});
