import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GroupCommit } from '../../src/storage/sqlite/group-commit.js';

describe('GroupCommit', () => {
  it('gathers submissions of one turn into one commit and answers each with its own outcome', async () => {
    const batches: number[][] = [];
    const gc = new GroupCommit<number, number>((inputs) => {
      batches.push([...inputs]);
      return inputs.map((n) => (n === 3 ? { ok: false, error: new Error('three') } : { ok: true, value: n * 10 }));
    });
    const results = await Promise.allSettled([1, 2, 3, 4].map((n) => gc.submit(n)));
    assert.deepEqual(batches, [[1, 2, 3, 4]]);
    assert.deepEqual(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)), [10, 20, 'three', 40]);
  });

  it('fails the whole batch when the commit throws, and keeps working afterwards', async () => {
    let fail = true;
    const gc = new GroupCommit<number, number>((inputs) => {
      if (fail) throw new Error('disk full');
      return inputs.map((n) => ({ ok: true, value: n }));
    });
    const r = await Promise.allSettled([gc.submit(1), gc.submit(2)]);
    assert.deepEqual(r.map((x) => x.status), ['rejected', 'rejected']);
    fail = false;
    assert.equal(await gc.submit(5), 5);
  });

  it('splits oversized batches and never answers before the commit', async () => {
    const sizes: number[] = [];
    let committed = 0;
    const gc = new GroupCommit<number, number>((inputs) => {
      sizes.push(inputs.length);
      committed += inputs.length;
      return inputs.map(() => ({ ok: true, value: committed }));
    }, 10);
    const answers = await Promise.all(Array.from({ length: 25 }, (_, i) => gc.submit(i)));
    assert.deepEqual(sizes, [10, 10, 5]);
    answers.forEach((committedWhenAnswered, i) => assert.ok(committedWhenAnswered >= i + 1));
  });
});
