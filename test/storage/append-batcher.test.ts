import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppendBatcher } from '../../src/storage/postgres/append-batcher.js';

const sqlError = (code: string) => Object.assign(new Error(`sql ${code}`), { code });

describe('AppendBatcher', () => {
  it('commits what arrives together as one batch, one at a time, and answers in order', async () => {
    const batches: number[][] = [];
    const b = new AppendBatcher<number, number>(async (xs) => {
      batches.push([...xs]);
      await new Promise((r) => setTimeout(r, 5));
      return xs.map((x) => x * 2);
    }, async (x) => { batches.push([x]); return x * 2; });
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

  it('a batch refused with an SQL error is retried item by item, so only the bad item fails', async () => {
    const b = new AppendBatcher<number, number>(async () => { throw sqlError('23505'); },
      async (x) => { if (x === 2) throw sqlError('23505'); return x; });
    const r = await Promise.allSettled([1, 2, 3].map((x) => b.submit(x)));
    assert.deepEqual(r.map((x) => x.status), ['fulfilled', 'rejected', 'fulfilled']);
  });

  it('a lost connection (outcome unknown) fails the batch without retrying it', async () => {
    let singles = 0;
    const b = new AppendBatcher<number, number>(async () => { throw new Error('Connection terminated unexpectedly'); },
      async (x) => { singles++; return x; });
    const r = await Promise.allSettled([1, 2].map((x) => b.submit(x)));
    assert.deepEqual(r.map((x) => x.status), ['rejected', 'rejected']);
    assert.equal(singles, 0, 'no retry could store an event twice');
  });
});
