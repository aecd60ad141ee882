import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GroupCommit } from '../../src/storage/sqlite/group-commit.js';

/** A sync the test ends by hand, recording what had been committed when each one started. */
function manualSync(committed: () => number[]) {
  const started: { committedBefore: number[]; end: (error?: Error) => void }[] = [];
  return {
    started,
    sync: (done: (error: Error | null) => void) => started.push({ committedBefore: [...committed()], end: (error) => done(error ?? null) }),
  };
}
const turn = () => new Promise((r) => setImmediate(r));

/** A group commit over a manual sync that records its batches; `submit` records the answers in order. */
function recorded(options: { lateCommitMs?: number } = {}) {
  const batches: number[][] = [];
  const committed: number[] = [];
  const disk = manualSync(() => committed);
  const gc = new GroupCommit<number, number>((inputs) => {
    batches.push([...inputs]);
    committed.push(...inputs);
    return inputs.map((n) => ({ ok: true, value: n }));
  }, 1000, { sync: disk.sync, ...options });
  const answered: number[] = [];
  const submit = (n: number) => gc.submit(n).then((v) => void answered.push(v));
  return { gc, batches, disk, answered, submit };
}

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

  it('commits nothing while a sync is in flight, then everything submitted meanwhile in one batch', async () => {
    const { gc, batches, disk, answered, submit } = recorded();
    const first = submit(1);
    await turn();
    assert.deepEqual(batches, [[1]]);
    assert.equal(disk.started.length, 1, 'the first commit starts a sync');
    // Three turns of submissions while that sync runs: none is committed yet.
    const later: Promise<void>[] = [];
    for (const n of [2, 3, 4]) {
      later.push(submit(n));
      await turn();
    }
    assert.deepEqual(batches, [[1]], 'nothing is committed during the sync');
    assert.deepEqual(answered, [], 'nothing is answered before its sync ends');
    disk.started[0]!.end();
    await first;
    assert.deepEqual(answered, [1]);
    await turn();
    assert.deepEqual(batches, [[1], [2, 3, 4]], 'the submissions made during the sync share one commit');
    assert.equal(disk.started.length, 2);
    assert.deepEqual(disk.started[1]!.committedBefore, [1, 2, 3, 4], 'the second sync started after their commit');
    assert.deepEqual(answered, [1], 'and they wait for it');
    disk.started[1]!.end();
    await Promise.all(later);
    assert.deepEqual(answered, [1, 2, 3, 4]);
    assert.equal(gc.busy(), false);
  });

  it('a sync that runs long lets what is pending commit during it, once, and the next sync starts the moment it ends', async () => {
    const { gc, batches, disk, answered, submit } = recorded({ lateCommitMs: 5 });
    const first = submit(1);
    await turn();
    assert.equal(disk.started.length, 1);
    const during = [submit(2), submit(3)];
    await turn();
    assert.deepEqual(batches, [[1]], 'within lateCommitMs, nothing is committed during the sync');
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(batches, [[1], [2, 3]], 'past it, the pending submissions are committed during the sync');
    assert.equal(disk.started.length, 1, 'but no second sync starts while the first is in flight');
    assert.deepEqual(answered, [], 'and nothing is answered before a sync that began after its commit');
    // Once per sync: later submissions wait for the sync to end, however long it runs.
    const after = submit(4);
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(batches, [[1], [2, 3]], 'one late commit per sync');
    disk.started[0]!.end();
    await first;
    assert.deepEqual(answered, [1], '2 and 3 were committed during that sync, so it does not cover them');
    assert.equal(disk.started.length, 2, 'the sync covering the late commit starts as soon as the first ends');
    assert.deepEqual(disk.started[1]!.committedBefore, [1, 2, 3]);
    // 4 is pending during that second sync, which gets a late commit of its own.
    await turn();
    assert.deepEqual(batches, [[1], [2, 3]]);
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(batches, [[1], [2, 3], [4]], 'each sync may have one late commit');
    disk.started[1]!.end();
    await Promise.all(during);
    assert.deepEqual(answered, [1, 2, 3]);
    assert.equal(disk.started.length, 3, 'the sync covering 4 starts as soon as the second ends');
    disk.started[2]!.end();
    await after;
    assert.deepEqual(answered, [1, 2, 3, 4]);
    assert.equal(gc.stats.lateCommits, 2);
    assert.equal(gc.busy(), false);
  });

  it('a barrier during a sync waits for the next sync; a failed sync fails its cohort and everything after', async () => {
    const committed: number[] = [];
    const disk = manualSync(() => committed);
    const gc = new GroupCommit<number, number>((inputs) => {
      committed.push(...inputs);
      return inputs.map((n) => ({ ok: true, value: n }));
    }, 1000, { sync: disk.sync });
    const first = gc.submit(1);
    await turn();
    let barrierDone = false;
    const barrier = gc.barrier().then(() => { barrierDone = true; });
    const second = gc.submit(2);
    disk.started[0]!.end();
    assert.equal(await first, 1);
    assert.equal(barrierDone, false, 'a barrier is not covered by a sync that started before it');
    assert.equal(disk.started.length, 2, 'the barrier starts the next sync as soon as the first ends');
    disk.started[1]!.end(new Error('EIO'));
    await barrier.then(() => assert.fail('the barrier must fail with its sync'), (e: Error) => assert.equal(e.message, 'EIO'));
    await assert.rejects(second, /EIO/, 'a submission not yet committed when the sync failed fails too');
    await assert.rejects(gc.submit(3), /EIO/, 'and so does every later one');
    assert.deepEqual(committed, [1], 'nothing is committed after a failed sync');
  });
});
