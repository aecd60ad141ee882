// Each address's queue counters (event_count, event_bytes) as both stores keep them: exact after
// appends (data and metadata as UTF-8, and blobs), acks, pruning by count and by bytes, and the
// retention of acknowledged events, also under a parallel interleaving of all of them. SQLite holds
// them in memory and writes the row lazily (sqlite-queue-counters.ts), PostgreSQL in every
// transaction (ra_append_events, ra_delete_acknowledged): the stored counters are compared to a
// recount of the events and their blob rows, while the store runs and after it closed.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { BlobInput } from '../../src/blobs/event-blob.js';
import type { EventRecord, NewEvent } from '../../src/domain/model.js';
import type { StoreLimits } from '../../src/domain/ports.js';
import { type ContractStore, describeStoreContract, newEvent, ROOMY } from './contract-store.js';
import { PAGE_BYTES } from './store-records.js';

const weight = (e: NewEvent) =>
  Buffer.byteLength(e.data) + (e.metadata === null ? 0 : Buffer.byteLength(e.metadata)) + (e.blobs ?? []).reduce((n, b) => n + b.bytes.byteLength, 0);

function blob(size: number): BlobInput {
  const bytes = new Uint8Array(size).fill(7);
  return { name: 'raw', contentType: 'application/octet-stream', bytes, sha256: createHash('sha256').update(bytes).digest('hex') };
}

async function expectExact(c: ContractStore, addressId: string, expected: { events: number; bytes: number }, when: string) {
  assert.deepEqual(await c.recount(addressId), expected, `recount ${when}`);
  assert.deepEqual(await c.storedCounters(addressId), expected, `stored counters ${when}`);
}

async function created(c: ContractStore, e: NewEvent, limits: StoreLimits = ROOMY) {
  const r = await c.store.appendEvent(e, limits);
  assert.ok(r.kind === 'created', r.kind);
  return r.event;
}

describeStoreContract('Store contract: retention and exact counters', [
  {
    name: 'counters follow appends (UTF-8, metadata, blobs), acks, pruning by count and by bytes, retention and close',
    async run(c) {
      const a = await c.address();
      const e1 = newEvent(a.id, { data: JSON.stringify('é😀'), metadata: JSON.stringify({ k: 'v' }) });
      const e2 = newEvent(a.id, { blobs: [blob(1_000)] });
      const e3 = newEvent(a.id, { data: '1' });
      for (const e of [e1, e2, e3]) await created(c, e);
      assert.equal(weight(e1), 8 + 9);
      const w = weight(e1) + weight(e2) + weight(e3);
      await expectExact(c, a.id, { events: 3, bytes: w }, 'after three appends');
      await c.store.ackEvent(a.id, e1.id, 5_000);
      await expectExact(c, a.id, { events: 3, bytes: w }, 'an ack changes nothing');
      assert.equal(await c.store.deleteAcknowledgedBefore(5_001, 100), 1);
      await expectExact(c, a.id, { events: 2, bytes: w - weight(e1) }, 'after retention took the acked event');
      // Pruning by count: none acknowledged is queue_full and changes nothing; an acked blob event goes with its blob.
      const byCount = { maxEventsPerAddress: 2, maxBytesPerAddress: 1 << 30 };
      assert.deepEqual(await c.store.appendEvent(newEvent(a.id), byCount), { kind: 'queue_full' });
      await expectExact(c, a.id, { events: 2, bytes: weight(e2) + weight(e3) }, 'after queue_full');
      await c.store.ackEvent(a.id, e2.id, 5_000);
      const e4 = newEvent(a.id, { data: JSON.stringify('x'.repeat(98)) });
      await created(c, e4, byCount);
      await expectExact(c, a.id, { events: 2, bytes: weight(e3) + weight(e4) }, 'after a prune by count');
      // Pruning by bytes: e5 fits only once the acknowledged e3 is pruned.
      await c.store.ackEvent(a.id, e3.id, 5_000);
      const e5 = newEvent(a.id, { data: JSON.stringify('y'.repeat(48)) });
      await created(c, e5, { maxEventsPerAddress: 100, maxBytesPerAddress: weight(e4) + weight(e5) });
      await expectExact(c, a.id, { events: 2, bytes: weight(e4) + weight(e5) }, 'after a prune by bytes');
      await c.reopen();
      assert.deepEqual(await c.rowCounters(a.id), await c.recount(a.id), 'the row itself after close');
      await created(c, newEvent(a.id));
      await expectExact(c, a.id, { events: 3, bytes: weight(e4) + weight(e5) + weight(newEvent(a.id)) }, 'after reopening');
    },
  },
  {
    name: 'retention: only events acknowledged before the cutoff, at most a batch at a time, never an open one',
    async run(c) {
      const a = await c.address();
      const events: EventRecord[] = [];
      for (let i = 0; i < 10; i++) events.push(await created(c, newEvent(a.id, { data: JSON.stringify('z'.repeat(i)) })));
      for (let i = 0; i < 6; i++) await c.store.ackEvent(a.id, events[i]!.id, 10_000 + i);
      assert.equal(await c.store.deleteAcknowledgedBefore(10_003, 2), 2, 'a batch of 2');
      assert.deepEqual(
        (await c.store.listEvents(a.id, 0, 100, PAGE_BYTES))?.events.map((e) => e.sequence),
        [3, 4, 5, 6, 7, 8, 9, 10],
        'the earliest acknowledged go first',
      );
      assert.equal(await c.store.deleteAcknowledgedBefore(10_003, 2), 1, 'the cutoff is exclusive: acked at 10,003 stays');
      assert.equal(await c.store.deleteAcknowledgedBefore(10_003, 2), 0);
      const left = (await c.store.listEvents(a.id, 0, 100, PAGE_BYTES))?.events.map((e) => e.sequence);
      assert.deepEqual(left, [4, 5, 6, 7, 8, 9, 10]);
      const bytes = (from: number) => events.slice(from).reduce((n, e) => n + Buffer.byteLength(e.data), 0);
      await expectExact(c, a.id, { events: 7, bytes: bytes(3) }, 'after retention in batches');
      assert.equal(await c.store.deleteAcknowledgedBefore(20_000, 100), 3);
      await expectExact(c, a.id, { events: 4, bytes: bytes(6) }, 'only the open events are left');
    },
  },
  {
    name: 'parallel: 200 appends (pruning by count and bytes, some with blobs), 200 acks and retention at once leave the counters exact',
    async run(c) {
      const a = await c.address();
      const limits = { maxEventsPerAddress: 120, maxBytesPerAddress: 60_000 };
      const sized = (i: number) => newEvent(a.id, { data: JSON.stringify('p'.repeat((i * 37) % 700)), ...(i % 9 === 0 ? { blobs: [blob(1_500)] } : {}) });
      const prefilled: string[] = [];
      for (let i = 0; i < 100; i++) prefilled.push((await created(c, sized(i), limits)).id);
      const outcomes: string[] = [];
      const ops: Promise<unknown>[] = [];
      for (let i = 0; i < 200; i++) {
        ops.push(
          (async () => {
            const r = await c.store.appendEvent(sized(100 + i), limits);
            outcomes.push(r.kind);
            // Half of them acknowledged at once, while the other appends prune.
            if (r.kind === 'created' && i % 2 === 0) await c.store.ackEvent(a.id, r.event.id, Date.now());
          })(),
        );
        if (i < 100) ops.push(c.store.ackEvent(a.id, prefilled[i]!, Date.now()));
        if (i % 20 === 0) ops.push(c.store.deleteAcknowledgedBefore(Date.now() + 1, 5));
      }
      await Promise.all(ops);
      assert.ok(outcomes.filter((k) => k === 'created').length > 100, `most appends were stored (${outcomes.length} answered)`);
      const held = await c.recount(a.id);
      assert.ok(held.events <= limits.maxEventsPerAddress && held.bytes <= limits.maxBytesPerAddress, 'the limits hold');
      assert.deepEqual(await c.storedCounters(a.id), held, 'the stored counters equal a recount');
      const [all] = await c.query<{ n: number | string }>('SELECT count(*) AS n FROM events', []);
      assert.equal((await c.store.queueTotals(1)).stored, Number(all?.n), 'the stored total equals a count of every event');
      await c.reopen();
      assert.deepEqual(await c.rowCounters(a.id), held, 'the row itself after close');
      // With every event acknowledged, a whole quota's worth fits again (counters too high would refuse it).
      for (const e of (await c.store.listEvents(a.id, 0, 200, PAGE_BYTES))?.events ?? []) await c.store.ackEvent(a.id, e.id, Date.now());
      await created(c, newEvent(a.id, { data: JSON.stringify('q'.repeat(limits.maxBytesPerAddress - 2)) }), limits);
      await expectExact(c, a.id, { events: 1, bytes: limits.maxBytesPerAddress }, 'after a full-quota event');
    },
  },
]);
