// The PostgreSQL store below the HTTP layer, with several store instances on one fresh database:
// racing migrations, racing expiry sweepers, NOTIFY only after commit, queue limits under
// concurrency, and a close() that leaves no connection behind.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { newEventId } from '../../src/domain/credentials.js';
import type { NewEvent } from '../../src/domain/model.js';
import type { Log } from '../../src/domain/ports.js';
import { INBOX_TRUST_JSON } from '../../src/domain/trust.js';
import { readMigrations } from '../../src/storage/migration-files.js';
import { LISTENER_APPLICATION_NAME, PostgresStore } from '../../src/storage/postgres/postgres-store.js';
import { createTestStorage, onlyPostgres, range, sleep, type TestStorage } from '../helpers.js';
import { newAddress, PAGE_BYTES, RATE } from './store-records.js';

function newEvent(addressId: string, dedupeKey: string | null = null): NewEvent {
  return {
    id: newEventId(),
    addressId,
    type: 'test',
    source: 'test',
    data: '{"x":1}',
    metadata: null,
    dedupeKey,
    trust: INBOX_TRUST_JSON,
    createdAt: Date.now(),
  };
}

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

const openStore = (storage: TestStorage, poolSize = 5, log?: Log) =>
  new PostgresStore({ connectionString: storage.databaseUrl!, poolSize, statementTimeoutMs: 10_000, log });

/** A Log that keeps what it is told, for asserting on background failures. */
function recordingLog() {
  const lines: { level: string; msg: string; obj: Record<string, unknown> }[] = [];
  const at = (level: string) => (obj: object, msg: string) => void lines.push({ level, msg, obj: obj as Record<string, unknown> });
  return { lines, log: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } satisfies Log };
}

describe('PostgreSQL store', { skip: onlyPostgres }, () => {
  let storage: TestStorage;
  let s1: PostgresStore;
  let s2: PostgresStore;
  before(async () => {
    storage = await createTestStorage();
    s1 = openStore(storage);
    s2 = openStore(storage);
  });
  after(async () => {
    await Promise.all([s1?.close(), s2?.close()]);
    await storage?.drop();
  });

  it('migrations racing on a fresh database all succeed and apply each file once', async () => {
    const racers = [s1, s2, openStore(storage), openStore(storage)];
    await Promise.all(racers.map((s) => s.migrate()));
    await Promise.all(racers.slice(2).map((s) => s.close()));
    const files = readMigrations('src/storage/postgres/migrations');
    await withClient(storage.databaseUrl!, async (c) => {
      const applied = await c.query<{ version: number; name: string }>('SELECT version, name FROM schema_migrations ORDER BY version');
      assert.deepEqual(
        applied.rows,
        files.map((f) => ({ version: f.version, name: f.name })),
      );
      const tables = await c.query<{ t: string }>(`SELECT table_name AS t FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`);
      assert.deepEqual(
        tables.rows.map((r) => r.t),
        [
          'addresses',
          'approval_answers',
          'approvals',
          'consumers',
          'event_blobs',
          'events',
          'rate_windows',
          'schema_migrations',
          'sender_policies',
          'store_epoch',
          'subscriptions',
        ],
      );
    });
    await s1.migrate(); // a later start is a no-op
  });

  it('a NOTIFY reaches another instance only once the event is readable there', async () => {
    const listener = openStore(storage, 2);
    let resyncs = 0;
    const notified = new Set<string>();
    // What a reader woken by the notification sees, read at the very moment of the wake-up.
    const seenReadable: Promise<boolean>[] = [];
    await listener.subscribe(
      (id) => {
        notified.add(id);
        seenReadable.push(listener.listEvents(id, 0, 10, PAGE_BYTES).then((page) => (page?.events.length ?? 0) > 0));
      },
      () => resyncs++,
    );
    assert.equal(resyncs, 1, 'the first LISTEN counts as a (re)sync');
    const addrs = range(1, 10).map(() => newAddress());
    for (const a of addrs) assert.deepEqual(await s1.createAddress(a, { ...RATE, now: Date.now() }), { allowed: true });
    await Promise.all(addrs.map((a) => s2.appendEvent(newEvent(a.id), { maxEventsPerAddress: 100, maxBytesPerAddress: 1 << 30 })));
    const until = Date.now() + 5000;
    while (seenReadable.length < addrs.length && Date.now() < until) await sleep(5);
    assert.deepEqual([...notified].sort(), addrs.map((a) => a.id).sort());
    assert.deepEqual(
      await Promise.all(seenReadable),
      addrs.map(() => true),
    );
    await listener.close();
  });

  it('parallel appends from two instances respect the queue limit: exactly max created, sequences 1..max', async () => {
    const a = newAddress();
    await s1.createAddress(a, { ...RATE, now: Date.now() });
    const limits = { maxEventsPerAddress: 5, maxBytesPerAddress: 1 << 30 };
    const results = await Promise.all(range(1, 30).map((i) => (i % 2 ? s1 : s2).appendEvent(newEvent(a.id), limits)));
    const created = results.flatMap((r) => (r.kind === 'created' ? [r.event.sequence] : []));
    assert.deepEqual(
      created.sort((x, y) => x - y),
      range(1, 5),
    );
    assert.equal(results.filter((r) => r.kind === 'queue_full').length, 25);
    // Acknowledging makes room: the oldest acknowledged event is pruned, sequences never restart.
    const page = await s2.listEvents(a.id, 0, 10, PAGE_BYTES);
    await s1.ackEvent(a.id, page!.events[0]!.id, Date.now());
    await s1.ackEvent(a.id, page!.events[1]!.id, Date.now());
    const next = await s2.appendEvent(newEvent(a.id), limits);
    assert.equal(next.kind, 'created');
    assert.equal(next.kind === 'created' && next.event.sequence, 6);
    const after = await s1.listEvents(a.id, 0, 10, PAGE_BYTES);
    assert.deepEqual(
      after!.events.map((e) => e.sequence),
      [2, 3, 4, 5, 6],
    );
    await withClient(storage.databaseUrl!, async (c) => {
      const r = await c.query<{ event_count: number; last_sequence: string }>('SELECT event_count, last_sequence FROM addresses WHERE id = $1', [a.id]);
      assert.deepEqual(r.rows[0], { event_count: 5, last_sequence: '6' });
    });
  });

  it('appends racing a delete either commit or find the address gone; nothing is left behind', async () => {
    const a = newAddress();
    await s1.createAddress(a, { ...RATE, now: Date.now() });
    const appends = range(1, 40).map((i) =>
      (i % 2 ? s1 : s2).appendEvent(newEvent(a.id, i % 3 === 0 ? 'k' : null), { maxEventsPerAddress: 100, maxBytesPerAddress: 1 << 30 }),
    );
    await sleep(1);
    const deleted = await s2.deleteAddress(a.id);
    const results = await Promise.all(appends);
    assert.equal(deleted, true);
    assert.equal(await s1.deleteAddress(a.id), false, 'a second delete finds nothing');
    for (const r of results) assert.ok(['created', 'duplicate', 'address_gone'].includes(r.kind), r.kind);
    assert.equal(await s1.listEvents(a.id, 0, 10, PAGE_BYTES), null);
    await withClient(storage.databaseUrl!, async (c) => {
      const r = await c.query('SELECT 1 FROM events WHERE address_id = $1', [a.id]);
      assert.equal(r.rowCount, 0);
    });
  });

  it('two sweepers racing delete every expired address exactly once and notify each deletion', async () => {
    const now = Date.now();
    const expired = range(1, 120).map(() => newAddress(now - 1000));
    const alive = range(1, 5).map(() => newAddress(now + 3_600_000));
    for (const a of [...expired, ...alive]) await s1.createAddress(a, { ...RATE, now });
    const watcher = openStore(storage, 1);
    const notified = new Set<string>();
    await watcher.subscribe(
      (id) => notified.add(id),
      () => {},
    );
    const sweep = async (s: PostgresStore) => {
      const ids: string[] = [];
      for (;;) {
        const batch = await s.deleteExpired(now, 7);
        ids.push(...batch);
        if (batch.length < 7) return ids;
      }
    };
    const [x, y] = await Promise.all([sweep(s1), sweep(s2)]);
    assert.equal(x.length + y.length, expired.length, 'no address deleted twice');
    assert.deepEqual([...x, ...y].sort(), expired.map((a) => a.id).sort());
    for (const a of alive) assert.ok(await s2.getAddress(a.id), 'unexpired addresses stay');
    const until = Date.now() + 5000;
    while (notified.size < expired.length && Date.now() < until) await sleep(5);
    assert.deepEqual([...notified].sort(), expired.map((a) => a.id).sort());
    await watcher.close();
  });

  it('close() ends the pool and the LISTEN connection; ping() then fails', async () => {
    const s = openStore(storage, 3);
    await s.subscribe(
      () => {},
      () => {},
    );
    await Promise.all(range(1, 5).map(() => s.ping()));
    const count = (c: pg.Client) =>
      c
        .query<{ n: string }>(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'return-address%'`)
        .then((r) => Number(r.rows[0]!.n));
    await withClient(storage.databaseUrl!, async (c) => {
      const before = await count(c);
      await s.close();
      await s.close(); // idempotent
      // Backends go away asynchronously after the client's Terminate message.
      let n = await count(c);
      for (let i = 0; i < 100 && n > before - 4; i++) {
        await sleep(20);
        n = await count(c);
      }
      assert.ok(before - n >= 4, `pool (3) and listener (1) connections closed: ${before} -> ${n}`);
    });
    await assert.rejects(s.ping());
    assert.equal(s.listenerStatus()!.state, 'closed');
  });

  it('logs a lost LISTEN connection once and its return once, and an idle pooled connection that failed', async () => {
    const { lines, log } = recordingLog();
    const s = openStore(storage, 2, log);
    let resyncs = 0;
    await s.subscribe(
      () => {},
      () => resyncs++,
    );
    await Promise.all(range(1, 4).map(() => s.ping())); // idle pooled connections to kill
    const terminate = (app: string) =>
      withClient(storage.databaseUrl!, (c) =>
        c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1', [app]),
      );
    await terminate(LISTENER_APPLICATION_NAME);
    await terminate('return-address');
    const until = Date.now() + 10_000;
    while (resyncs < 2 && Date.now() < until) await sleep(20);
    assert.equal(resyncs, 2, 'the listener came back and asked for a resync');
    const msgs = (level: string, re: RegExp) => lines.filter((l) => l.level === level && re.test(l.msg));
    assert.equal(msgs('warn', /LISTEN connection lost/).length, 1, JSON.stringify(lines));
    assert.equal(msgs('warn', /LISTEN connection lost/)[0]!.obj.losses, 1);
    const back = msgs('info', /LISTEN connection back/);
    assert.equal(back.length, 1);
    assert.equal(typeof back[0]!.obj.downMs, 'number');
    const idle = msgs('warn', /idle PostgreSQL connection failed/);
    assert.ok(idle.length >= 1, 'the pool error is logged, not swallowed');
    assert.equal(idle.at(-1)!.obj.idleConnectionsLost, idle.length, 'with a running count');
    await s.ping(); // the pool still serves
    await s.close();
  });
});
