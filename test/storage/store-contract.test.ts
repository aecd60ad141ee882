// The Store port's rules, one table of cases run against the store STORE selects (npm test runs it
// on both): what both backends must answer alike, so that no rule is decided twice.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { newEventId } from '../../src/domain/credentials.js';
import type { AddressRecord, NewEvent } from '../../src/domain/model.js';
import { type Store, StoreClosedError } from '../../src/domain/ports.js';
import { INBOX_TRUST_JSON } from '../../src/domain/trust.js';
import { openStore } from '../../src/storage/open-store.js';
import { createTestStorage, type TestStorage } from '../helpers.js';
import { newAddress, PAGE_BYTES } from './store-records.js';

const WINDOW = 60_000;
const T0 = 1_800_000_000_000 - (1_800_000_000_000 % WINDOW); // the start of a window

function newEvent(addressId: string, dedupeKey: string | null = null): NewEvent {
  return { id: newEventId(), addressId, type: 't', source: 's', data: '{"n":1}', metadata: null, dedupeKey, trust: INBOX_TRUST_JSON, createdAt: Date.now() };
}

interface Case {
  name: string;
  run(store: Store, storage: TestStorage): Promise<void>;
}

const cases: Case[] = [
  {
    name: 'rate window: the limit refuses within a window, with the seconds left; a refusal inserts nothing',
    async run(store) {
      const rate = (now: number) => ({ key: `k-${Math.random()}`, limit: 2, windowMs: WINDOW, now });
      const r = rate(T0 + 10_000);
      const a = newAddress();
      assert.deepEqual(await store.createAddress(newAddress(), r), { allowed: true });
      assert.deepEqual(await store.createAddress(newAddress(), { ...r, now: T0 + 20_000 }), { allowed: true });
      assert.deepEqual(await store.createAddress(a, { ...r, now: T0 + 30_500 }), { allowed: false, retryAfterSeconds: 30 });
      assert.equal(await store.getAddress(a.id), null, 'the refused address was not inserted');
      // The next window starts over.
      assert.deepEqual(await store.createAddress(a, { ...r, now: T0 + WINDOW + 1 }), { allowed: true });
    },
  },
  {
    name: 'rate window: an attempt stamped in an earlier window (a lagging clock) counts against the stored window',
    async run(store) {
      const key = `lag-${Math.random()}`;
      const at = (now: number) => ({ key, limit: 2, windowMs: WINDOW, now });
      assert.deepEqual(await store.createAddress(newAddress(), at(T0 + WINDOW + 5_000)), { allowed: true });
      assert.deepEqual(await store.createAddress(newAddress(), at(T0 + 5_000)), { allowed: true }, 'counted in the later window');
      assert.deepEqual(
        await store.createAddress(newAddress(), at(T0 + 6_000)),
        { allowed: false, retryAfterSeconds: 114 },
        'refused until the stored (later) window ends, not reopened',
      );
      assert.deepEqual(await store.createAddress(newAddress(), at(T0 + WINDOW + 10_000)), { allowed: false, retryAfterSeconds: 50 });
    },
  },
  {
    name: 'cursor: any safe integer is a valid after; past the end answers an empty page',
    async run(store) {
      const a = newAddress();
      await store.createAddress(a, { key: 'c', limit: 1e6, windowMs: WINDOW, now: Date.now() });
      await store.appendEvent(newEvent(a.id), { maxEventsPerAddress: 10, maxBytesPerAddress: 1 << 30 });
      for (const after of [0, 1, 2 ** 31, 2 ** 53 - 1]) {
        const page = await store.listEvents(a.id, after, 10, PAGE_BYTES);
        assert.ok(page);
        assert.equal(page.events.length, after === 0 ? 1 : 0, `after=${after}`);
        assert.equal(page.hasMore, false);
      }
      assert.equal(await store.listEvents('addr_unknown', 0, 10, PAGE_BYTES), null);
    },
  },
  {
    name: 'append: sequences from 1 without gaps; a repeated dedupe key answers the original',
    async run(store) {
      const a = newAddress();
      await store.createAddress(a, { key: 'c', limit: 1e6, windowMs: WINDOW, now: Date.now() });
      const limits = { maxEventsPerAddress: 100, maxBytesPerAddress: 1 << 30 };
      const results = await Promise.all([newEvent(a.id, 'k1'), newEvent(a.id), newEvent(a.id, 'k1'), newEvent(a.id)].map((e) => store.appendEvent(e, limits)));
      const created = results.filter((r) => r.kind === 'created');
      assert.equal(created.length, 3);
      assert.deepEqual(created.map((r) => (r.kind === 'created' ? r.event.sequence : 0)).sort(), [1, 2, 3]);
      const dup = results.find((r) => r.kind === 'duplicate');
      assert.ok(dup && dup.kind === 'duplicate');
      assert.equal(dup.event.dedupeKey, 'k1');
      assert.equal(dup.event.id, (results[0] as { event: { id: string } }).event.id);
    },
  },
  {
    name: 'queue limit: the oldest acknowledged event is pruned first; with none acknowledged, queue_full; sequences go on',
    async run(store) {
      const a = newAddress();
      await store.createAddress(a, { key: 'c', limit: 1e6, windowMs: WINDOW, now: Date.now() });
      const limits = { maxEventsPerAddress: 2, maxBytesPerAddress: 1 << 30 };
      const first = await store.appendEvent(newEvent(a.id), limits);
      await store.appendEvent(newEvent(a.id), limits);
      assert.deepEqual(await store.appendEvent(newEvent(a.id), limits), { kind: 'queue_full' });
      assert.ok(first.kind === 'created');
      await store.ackEvent(a.id, first.event.id, Date.now());
      const third = await store.appendEvent(newEvent(a.id), limits);
      assert.ok(third.kind === 'created');
      assert.equal(third.event.sequence, 3);
      const page = await store.listEvents(a.id, 0, 10, PAGE_BYTES);
      assert.deepEqual(
        page?.events.map((e) => e.sequence),
        [2, 3],
      );
    },
  },
  {
    name: 'byte quota: as few of the oldest acknowledged events are pruned as free enough bytes; an exact fit prunes nothing',
    async run(store) {
      const a = newAddress();
      await store.createAddress(a, { key: 'c', limit: 1e6, windowMs: WINDOW, now: Date.now() });
      // Data of n bytes stored (a JSON string: n - 2 characters and its quotes; n = 1 is the number 1); a quota of 1,000.
      const sized = (n: number, metadata: string | null = null): NewEvent => ({
        ...newEvent(a.id),
        data: n === 1 ? '1' : JSON.stringify('x'.repeat(n - 2)),
        metadata,
      });
      const limits = { maxEventsPerAddress: 100, maxBytesPerAddress: 1_000 };
      const seq = async (e: NewEvent) => {
        const r = await store.appendEvent(e, limits);
        return r.kind === 'created' ? r.event.sequence : r.kind;
      };
      assert.equal(await seq(sized(300)), 1);
      assert.equal(await seq(sized(300)), 2);
      // Metadata counts: 200 of data and 100 of metadata ({"k":"…"} is 8 + 92 characters).
      assert.equal(await seq(sized(200, JSON.stringify({ k: 'm'.repeat(92) }))), 3);
      assert.equal(await seq(sized(100)), 4, 'exactly 1,000 bytes: fits without pruning');
      assert.equal(await seq(sized(1)), 'queue_full', 'one byte over, and nothing acknowledged');
      const page = await store.listEvents(a.id, 0, 10, PAGE_BYTES);
      for (const e of page?.events.slice(0, 3) ?? []) await store.ackEvent(a.id, e.id, Date.now());
      // 350 bytes need 350 freed: events 1 and 2 (600 bytes), not 1 alone (300) nor also 3.
      assert.equal(await seq(sized(350)), 5);
      const left = await store.listEvents(a.id, 0, 10, PAGE_BYTES);
      assert.deepEqual(
        left?.events.map((e) => e.sequence),
        [3, 4, 5],
      );
      // 750 held (300 of them acknowledged, event 3): 551 needs 301, more than the acknowledged events hold.
      assert.equal(await seq(sized(551)), 'queue_full');
      assert.equal(await seq(sized(550)), 6, 'needs exactly the 300 of event 3');
      assert.deepEqual(
        (await store.listEvents(a.id, 0, 10, PAGE_BYTES))?.events.map((e) => e.sequence),
        [4, 5, 6],
      );
    },
  },
  {
    name: 'counters: exact under parallel acks interleaved with appends that prune, and with retention deletes',
    async run(store) {
      // Each append past the limit prunes the oldest acknowledged events while acks land beside it;
      // an ack committed between the prune's count and its delete must not leave the address's
      // counters (events and bytes) above what it holds. Then the whole quota must still be usable.
      const a = newAddress();
      await store.createAddress(a, { key: 'c', limit: 1e6, windowMs: WINDOW, now: Date.now() });
      const size = newEvent(a.id).data.length;
      const max = 400;
      const limits = { maxEventsPerAddress: max, maxBytesPerAddress: max * size };
      const storedBefore = (await store.queueTotals(1)).stored;
      const open: string[] = [];
      const append = async () => {
        const r = await store.appendEvent(newEvent(a.id), limits);
        if (r.kind === 'created') open.push(r.event.id);
      };
      await Promise.all(Array.from({ length: max }, append));
      assert.equal(open.length, max);
      const ackSome = (n: number, retentionCutoff: number | null) => {
        const picked: string[] = [];
        for (let i = 0; i < n && open.length > 0; i++) picked.push(...open.splice(Math.floor(Math.random() * open.length), 1));
        return [
          ...picked.map((id) => store.ackEvent(a.id, id, Date.now())),
          ...(retentionCutoff === null ? [] : [store.deleteAcknowledgedBefore(retentionCutoff, 7)]),
        ];
      };
      for (let round = 0; round < 60; round++) {
        await Promise.all([...ackSome(30, round % 5 === 4 ? Date.now() : null), ...Array.from({ length: 30 }, append)]);
      }
      // Recount what the address holds, page by page.
      let held = 0;
      for (let after = 0; ; ) {
        const page = await store.listEvents(a.id, after, 100, PAGE_BYTES);
        assert.ok(page);
        held += page.events.length;
        if (!page.hasMore) break;
        after = page.events.at(-1)!.sequence;
      }
      assert.equal((await store.queueTotals(1)).stored - storedBefore, held, 'the stored count equals a recount of the events');
      // With everything acknowledged, a full quota of new events fits (a counter left too high refuses the last ones).
      await Promise.all(ackSome(open.length, null));
      const refills = await Promise.all(Array.from({ length: max }, () => store.appendEvent(newEvent(a.id), limits)));
      assert.equal(refills.filter((r) => r.kind !== 'created').length, 0, 'every event of a full quota was stored');
      assert.equal((await store.queueTotals(1)).stored - storedBefore, max);
    },
  },
  {
    name: 'ack: the first time stays; unknown events and addresses answer null',
    async run(store) {
      const a = newAddress();
      await store.createAddress(a, { key: 'c', limit: 1e6, windowMs: WINDOW, now: Date.now() });
      const r = await store.appendEvent(newEvent(a.id), { maxEventsPerAddress: 10, maxBytesPerAddress: 1 << 30 });
      assert.ok(r.kind === 'created');
      assert.equal((await store.ackEvent(a.id, r.event.id, 1000))?.acknowledgedAt, 1000);
      assert.equal((await store.ackEvent(a.id, r.event.id, 2000))?.acknowledgedAt, 1000);
      assert.equal(await store.ackEvent(a.id, newEventId(), 1000), null);
      assert.equal(await store.ackEvent('addr_unknown', r.event.id, 1000), null);
    },
  },
  {
    name: 'delete and expiry: deleteAddress once; deleteExpired takes only what expired before the cutoff',
    async run(store) {
      const now = Date.now();
      const expired: AddressRecord = newAddress(now - 10);
      const alive = newAddress(now + 60_000);
      for (const x of [expired, alive]) await store.createAddress(x, { key: 'c', limit: 1e6, windowMs: WINDOW, now });
      const swept: string[] = [];
      for (let batch = await store.deleteExpired(now, 100); batch.length > 0; batch = await store.deleteExpired(now, 100)) swept.push(...batch);
      assert.ok(swept.includes(expired.id));
      assert.ok(!swept.includes(alive.id));
      assert.equal(await store.deleteAddress(alive.id), true);
      assert.equal(await store.deleteAddress(alive.id), false);
      assert.equal(await store.getAddressBySlug(alive.slug), null);
    },
  },
];

describe('Store contract', () => {
  let storage: TestStorage;
  let store: Store;
  before(async () => {
    storage = await createTestStorage();
    store = await openStore(loadConfig(storage.env));
  });
  after(async () => {
    await store.close();
    await storage.drop();
  });

  for (const c of cases) it(c.name, () => c.run(store, storage));

  it('append after close: rejects with StoreClosedError and writes nothing', async () => {
    const s = await openStore(loadConfig(storage.env));
    const a = newAddress();
    await s.createAddress(a, { key: 'c', limit: 1e6, windowMs: WINDOW, now: Date.now() });
    await s.close();
    await assert.rejects(s.appendEvent(newEvent(a.id), { maxEventsPerAddress: 10, maxBytesPerAddress: 1 << 30 }), StoreClosedError);
    assert.equal((await store.listEvents(a.id, 0, 10, PAGE_BYTES))?.events.length, 0);
  });
});
