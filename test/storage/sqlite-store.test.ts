// The SQLite store below the HTTP layer, on a real file: appends submitted in the same turn share
// one transaction, and an item that fails, or that finds its queue full, must not take its
// neighbours down, consume a sequence, or leave half of its own work behind.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { newEventId } from '../../src/domain/credentials.js';
import type { AppendResult, NewEvent } from '../../src/domain/model.js';
import { INBOX_TRUST_JSON } from '../../src/domain/trust.js';
import { ACKED_SIZES_SQL, SqliteStore } from '../../src/storage/sqlite/sqlite-store.js';
import { onlySqlite, range } from '../helpers.js';
import { newAddress, PAGE_BYTES, RATE } from './store-records.js';

const newEvent = (addressId: string, data: unknown, id = newEventId()): NewEvent => ({
  id,
  addressId,
  type: 'test',
  source: 'test',
  data: JSON.stringify(data),
  metadata: null,
  dedupeKey: null,
  trust: INBOX_TRUST_JSON,
  createdAt: Date.now(),
});

const settle = (ps: Promise<AppendResult>[]) => Promise.allSettled(ps);

describe('SQLite store: a batch of appends', { skip: onlySqlite }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'ra-sqlite-store-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps its files private: a new DATA_DIR 0700, the database, WAL and shared memory 0600, so another local user cannot read the queues', async () => {
    const dataDir = join(dir, 'private', 'data');
    const store = new SqliteStore(join(dataDir, 'return-address.sqlite'));
    try {
      await store.migrate();
      const a = newAddress();
      await store.createAddress(a, { ...RATE, now: Date.now() });
      await store.appendEvent(newEvent(a.id, 'x'), { maxEventsPerAddress: 10, maxBytesPerAddress: 1 << 30 });
      assert.equal(statSync(dataDir).mode & 0o777, 0o700);
      const files = readdirSync(dataDir).sort();
      assert.deepEqual(files, ['return-address.sqlite', 'return-address.sqlite-shm', 'return-address.sqlite-wal']);
      for (const f of files) assert.equal(statSync(join(dataDir, f)).mode & 0o777, 0o600, f);
    } finally {
      await store.close();
    }
    // A database file left readable by an older version is narrowed when opened.
    const old = join(dir, 'old.sqlite');
    writeFileSync(old, '');
    chmodSync(old, 0o644);
    const reopened = new SqliteStore(old);
    await reopened.close();
    assert.equal(statSync(old).mode & 0o777, 0o600);
  });

  it('pruning reads only acknowledged events, through their own index (a full queue with none acknowledged costs no scan)', async () => {
    const file = join(dir, 'plan.sqlite');
    const store = new SqliteStore(file);
    await store.migrate();
    await store.close();
    const db = new Database(file, { readonly: true });
    try {
      const plan = db.prepare(`EXPLAIN QUERY PLAN ${ACKED_SIZES_SQL}`).all('addr_x') as { detail: string }[];
      assert.ok(
        plan.some((p) => p.detail.includes('USING INDEX events_acknowledged')),
        JSON.stringify(plan),
      );
    } finally {
      db.close();
    }
  });

  it('an item that fails rolls back alone: its neighbours commit and no sequence is skipped', async () => {
    const store = new SqliteStore(join(dir, 'failing-item.sqlite'));
    try {
      const a = newAddress();
      const b = newAddress();
      await store.createAddress(a, { ...RATE, now: Date.now() });
      await store.createAddress(b, { ...RATE, now: Date.now() });
      const taken = newEventId();
      // Submitted in one turn, so one transaction: the third item reuses the first's event id and
      // fails on the unique index, between items that succeed, on the same address and another.
      const results = await settle([
        store.appendEvent(newEvent(a.id, 1, taken), { maxEventsPerAddress: 100, maxBytesPerAddress: 1 << 30 }),
        store.appendEvent(newEvent(b.id, 1), { maxEventsPerAddress: 100, maxBytesPerAddress: 1 << 30 }),
        store.appendEvent(newEvent(a.id, 'dup', taken), { maxEventsPerAddress: 100, maxBytesPerAddress: 1 << 30 }),
        store.appendEvent(newEvent(a.id, 2), { maxEventsPerAddress: 100, maxBytesPerAddress: 1 << 30 }),
        store.appendEvent(newEvent(b.id, 2), { maxEventsPerAddress: 100, maxBytesPerAddress: 1 << 30 }),
      ]);
      assert.equal(results[2]!.status, 'rejected', 'the item with a taken id fails');
      assert.match(String((results[2] as PromiseRejectedResult).reason), /UNIQUE/);
      const created = results.filter((r) => r.status === 'fulfilled').map((r) => (r as PromiseFulfilledResult<AppendResult>).value);
      assert.deepEqual(
        created.map((r) => r.kind),
        ['created', 'created', 'created', 'created'],
        'its neighbours are stored',
      );
      const seqs = async (id: string) => (await store.listEvents(id, 0, 100, PAGE_BYTES))!.events.map((e) => [e.sequence, JSON.parse(e.data)]);
      assert.deepEqual(
        await seqs(a.id),
        [
          [1, 1],
          [2, 2],
        ],
        'the failed item took no sequence: the next one got 2',
      );
      assert.deepEqual(await seqs(b.id), [
        [1, 1],
        [2, 2],
      ]);
      const next = await store.appendEvent(newEvent(a.id, 3), { maxEventsPerAddress: 100, maxBytesPerAddress: 1 << 30 });
      assert.equal(next.kind === 'created' && next.event.sequence, 3, 'the counters written at the end of the batch are right');
    } finally {
      await store.close();
    }
  });

  it('a full queue prunes acknowledged events in the same batch, or refuses without deleting anything', async () => {
    const store = new SqliteStore(join(dir, 'prune.sqlite'));
    try {
      const a = newAddress();
      await store.createAddress(a, { ...RATE, now: Date.now() });
      const limits = { maxEventsPerAddress: 3, maxBytesPerAddress: 1 << 30 };
      for (const i of range(1, 3)) assert.equal((await store.appendEvent(newEvent(a.id, i), limits)).kind, 'created');
      const first = (await store.listEvents(a.id, 0, 1, PAGE_BYTES))!.events[0]!;
      assert.ok(await store.ackEvent(a.id, first.id, Date.now()));
      // One batch: the first item prunes the acknowledged event and is stored; the next two find
      // the queue full of unacknowledged events and are refused, their savepoints rolled back.
      const results = await Promise.all(range(4, 6).map((i) => store.appendEvent(newEvent(a.id, i), limits)));
      assert.deepEqual(
        results.map((r) => r.kind),
        ['created', 'queue_full', 'queue_full'],
      );
      const page = (await store.listEvents(a.id, 0, 100, PAGE_BYTES))!;
      assert.deepEqual(
        page.events.map((e) => e.sequence),
        [2, 3, 4],
        'the acknowledged event went; nothing else did',
      );
      // After acknowledging one more, the next append takes sequence 5: refusals consumed none.
      assert.ok(await store.ackEvent(a.id, page.events[0]!.id, Date.now()));
      const next = await store.appendEvent(newEvent(a.id, 7), limits);
      assert.equal(next.kind === 'created' && next.event.sequence, 5);
      assert.deepEqual(
        (await store.listEvents(a.id, 0, 100, PAGE_BYTES))!.events.map((e) => e.sequence),
        [3, 4, 5],
      );
      // The limit lowered (a restart with a smaller MAX_EVENTS_PER_ADDRESS): room for one more
      // needs two deletions, and only one event is acknowledged. The prune that deleted it must be
      // rolled back with the refusal.
      assert.ok(await store.ackEvent(a.id, (await store.listEvents(a.id, 0, 1, PAGE_BYTES))!.events[0]!.id, Date.now()));
      assert.equal((await store.appendEvent(newEvent(a.id, 8), { maxEventsPerAddress: 2, maxBytesPerAddress: 1 << 30 })).kind, 'queue_full');
      const kept = (await store.listEvents(a.id, 0, 100, PAGE_BYTES))!.events;
      assert.deepEqual(
        kept.map((e) => [e.sequence, e.acknowledgedAt !== null]),
        [
          [3, true],
          [4, false],
          [5, false],
        ],
        'the refused append deleted nothing',
      );
    } finally {
      await store.close();
    }
  });
});
