// The append rule under parallel writers, as both stores must answer it (SQLite in one group-commit
// transaction per batch, PostgreSQL in ra_append_events): dedupe keys, pruning by count and by bytes
// and queue_full decided as if the appends ran one at a time, with gapless sequences. The cases of
// one append at a time are in store-contract.test.ts.
import assert from 'node:assert/strict';
import type { AppendResult, EventRecord } from '../../src/domain/model.js';
import { onlyPostgres } from '../helpers.js';
import { type ContractStore, describeStoreContract, newEvent, ROOMY } from './contract-store.js';
import { PAGE_BYTES } from './store-records.js';

const createdEvents = (rs: AppendResult[]): EventRecord[] => rs.flatMap((r) => (r.kind === 'created' ? [r.event] : []));
const sequences = (es: EventRecord[]) => es.map((e) => e.sequence).sort((a, b) => a - b);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

async function held(c: ContractStore, addressId: string): Promise<number[]> {
  return (await c.store.listEvents(addressId, 0, 1_000, PAGE_BYTES))?.events.map((e) => e.sequence) ?? [];
}

describeStoreContract('Store contract: parallel appends', [
  {
    name: '100 parallel appends of 20 dedupe keys: 20 events, sequences 1-20, every duplicate answers its original',
    async run(c) {
      const a = await c.address();
      const rs = await Promise.all(Array.from({ length: 100 }, (_, i) => c.store.appendEvent(newEvent(a.id, { dedupeKey: `k${i % 20}` }), ROOMY)));
      const created = createdEvents(rs);
      assert.deepEqual(sequences(created), range(1, 20));
      const byKey = new Map(created.map((e) => [e.dedupeKey, e]));
      assert.equal(byKey.size, 20);
      for (const r of rs) {
        assert.ok(r.kind === 'created' || r.kind === 'duplicate', r.kind);
        assert.equal(r.event.id, byKey.get(r.event.dedupeKey)?.id);
      }
      assert.deepEqual(await c.storedCounters(a.id), await c.recount(a.id));
    },
  },
  {
    name: '50 parallel appends against a limit of 20 with nothing acknowledged: 20 created, 30 queue_full',
    async run(c) {
      const a = await c.address();
      const limits = { maxEventsPerAddress: 20, maxBytesPerAddress: 1 << 30 };
      const rs = await Promise.all(Array.from({ length: 50 }, () => c.store.appendEvent(newEvent(a.id), limits)));
      assert.deepEqual(sequences(createdEvents(rs)), range(1, 20));
      assert.equal(rs.filter((r) => r.kind === 'queue_full').length, 30);
      assert.deepEqual(await c.storedCounters(a.id), { events: 20, bytes: 20 * newEvent(a.id).data.length });
    },
  },
  {
    name: 'parallel appends prune by count: 20 acknowledged make room for exactly 20 of 50, the oldest pruned first',
    async run(c) {
      const a = await c.address();
      const limits = { maxEventsPerAddress: 20, maxBytesPerAddress: 1 << 30 };
      for (let i = 0; i < 20; i++) {
        const r = await c.store.appendEvent(newEvent(a.id), limits);
        assert.ok(r.kind === 'created');
        await c.store.ackEvent(a.id, r.event.id, Date.now());
      }
      const rs = await Promise.all(Array.from({ length: 50 }, () => c.store.appendEvent(newEvent(a.id), limits)));
      assert.deepEqual(sequences(createdEvents(rs)), range(21, 40));
      assert.deepEqual(await held(c, a.id), range(21, 40));
      assert.deepEqual(await c.storedCounters(a.id), await c.recount(a.id));
    },
  },
  {
    name: 'parallel appends prune by bytes: ten acknowledged 100-byte events make room for exactly ten more',
    async run(c) {
      const a = await c.address();
      const limits = { maxEventsPerAddress: 1_000, maxBytesPerAddress: 1_000 };
      const hundred = () => newEvent(a.id, { data: JSON.stringify('b'.repeat(98)) });
      for (let i = 0; i < 10; i++) {
        const r = await c.store.appendEvent(hundred(), limits);
        assert.ok(r.kind === 'created');
        await c.store.ackEvent(a.id, r.event.id, Date.now());
      }
      const rs = await Promise.all(Array.from({ length: 30 }, () => c.store.appendEvent(hundred(), limits)));
      assert.deepEqual(sequences(createdEvents(rs)), range(11, 20));
      assert.equal(rs.filter((r) => r.kind === 'queue_full').length, 20);
      assert.deepEqual(await held(c, a.id), range(11, 20));
      assert.deepEqual(await c.storedCounters(a.id), { events: 10, bytes: 1_000 });
    },
  },
  {
    name: 'appends racing a delete of their address answer created or address_gone, and leave nothing behind',
    async run(c) {
      const a = await c.address();
      assert.deepEqual(await c.store.appendEvent(newEvent('addr_unknown'), ROOMY), { kind: 'address_gone' });
      const appends = Array.from({ length: 40 }, () => c.store.appendEvent(newEvent(a.id), ROOMY));
      const deleted = c.store.deleteAddress(a.id);
      const rs = await Promise.all(appends);
      assert.equal(await deleted, true);
      for (const r of rs) assert.ok(r.kind === 'created' || r.kind === 'address_gone', r.kind);
      assert.deepEqual(await c.store.appendEvent(newEvent(a.id), ROOMY), { kind: 'address_gone' });
      assert.deepEqual(await c.query('SELECT sequence FROM events WHERE address_id = ?', [a.id]), []);
    },
  },
  {
    name: 'two instances appending to one address: gapless sequences, one event per dedupe key, exact counters',
    skip: onlyPostgres && 'SQLite has one writing process by design (design.md, "Queue counters in memory"); PostgreSQL instances share the database',
    async run(c) {
      const other = await c.openAnother();
      const a = await c.address();
      const rs = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          (i % 2 === 0 ? c.store : other).appendEvent(newEvent(a.id, { dedupeKey: i % 4 === 0 ? `k${i % 8}` : null }), ROOMY),
        ),
      );
      const created = createdEvents(rs);
      // 25 appends carry a key k0 or k4 (i % 8 is 0 or 4): two events; the 75 others: 75 events.
      assert.deepEqual(sequences(created), range(1, 77));
      assert.deepEqual(await c.storedCounters(a.id), await c.recount(a.id));
    },
  },
]);
