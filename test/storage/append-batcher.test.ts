import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppendBatcher } from '../../src/storage/postgres/append-batcher.js';

/** Items are their own size in bytes. */
const LIMITS = { maxBatch: 500, maxBatchBytes: 1000, aloneFromBytes: 400, sizeOf: (x: number) => x };
const sqlError = (code: string) => Object.assign(new Error(`sql ${code}`), { code });

describe('AppendBatcher', () => {
  it('commits what arrives together as one batch, one at a time, and answers in order', async () => {
    const batches: number[][] = [];
    const b = new AppendBatcher<number, number>(
      async (xs) => {
        batches.push([...xs]);
        await new Promise((r) => setTimeout(r, 5));
        return xs.map((x) => x * 2);
      },
      async (x) => {
        batches.push([x]);
        return x * 2;
      },
      LIMITS,
    );
    const first = await Promise.all([1, 2, 3].map((x) => b.submit(x)));
    assert.deepEqual(first, [2, 4, 6]);
    // While one batch commits, later submissions wait and form the next batch.
    const p1 = b.submit(10);
    await new Promise((r) => setImmediate(r));
    const rest = Promise.all([11, 12].map((x) => b.submit(x)));
    assert.deepEqual([await p1, ...(await rest)], [20, 22, 24]);
    assert.deepEqual(batches, [[1, 2, 3], [10], [11, 12]]);
    await b.whenIdle();
  });

  it('bounds a batch by count and bytes, and commits a large item alone, keeping arrival order', async () => {
    const batches: string[] = [];
    const b = new AppendBatcher<number, number>(
      async (xs) => {
        batches.push(`batch ${xs.join(',')}`);
        return xs;
      },
      async (x) => {
        batches.push(`alone ${x}`);
        return x;
      },
      { ...LIMITS, maxBatch: 3 },
    );
    const sizes = [100, 100, 100, 100, 300, 300, 300, 500, 10, 20, 399, 600, 5];
    assert.deepEqual(await Promise.all(sizes.map((x) => b.submit(x))), sizes);
    // 3 by count; 300+300+300 = 900 and 100+300+300 = 700 fit 1000, the next 300 would not;
    // 500 and 600 are at least aloneFromBytes: alone, and they end the batch before them (a batch
    // of one goes the single-item way too).
    assert.deepEqual(batches, ['batch 100,100,100', 'batch 100,300,300', 'alone 300', 'alone 500', 'batch 10,20,399', 'alone 600', 'alone 5']);
    await b.whenIdle();
  });

  it('a batch refused with an SQL error is retried item by item, so only the bad item fails', async () => {
    const b = new AppendBatcher<number, number>(
      async () => {
        throw sqlError('23505');
      },
      async (x) => {
        if (x === 2) throw sqlError('23505');
        return x;
      },
      LIMITS,
    );
    const r = await Promise.allSettled([1, 2, 3].map((x) => b.submit(x)));
    assert.deepEqual(
      r.map((x) => x.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
  });

  it('a lost connection (outcome unknown) fails the batch without retrying it', async () => {
    let singles = 0;
    const b = new AppendBatcher<number, number>(
      async () => {
        throw new Error('Connection terminated unexpectedly');
      },
      async (x) => {
        singles++;
        return x;
      },
      LIMITS,
    );
    const r = await Promise.allSettled([1, 2].map((x) => b.submit(x)));
    assert.deepEqual(
      r.map((x) => x.status),
      ['rejected', 'rejected'],
    );
    assert.equal(singles, 0, 'no retry could store an event twice');
  });
});
