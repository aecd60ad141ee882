import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GroupCommit, GroupCommitStats } from '../../src/storage/sqlite/group-commit.js';

/** A sync the test ends by hand, recording what had been committed when each one started. */
function manualSync(committed: () => number[]) {
  const started: { committedBefore: number[]; end: (error?: Error) => void }[] = [];
  return {
    started,
    sync: (done: (error: Error | null) => void) => started.push({ committedBefore: [...committed()], end: (error) => done(error ?? null) }),
  };
}
const turn = () => new Promise((r) => setImmediate(r));
const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await turn();
};

/** A group commit over a manual sync that records its batches; `submit` records the answers in order. */
function recorded(options: { maxSyncsInFlight?: number; quiet?: () => boolean } = {}) {
  const batches: number[][] = [];
  const committed: number[] = [];
  const disk = manualSync(() => committed);
  const stats = new GroupCommitStats();
  const gc = new GroupCommit<number, number>(
    (inputs) => {
      batches.push([...inputs]);
      committed.push(...inputs);
      return inputs.map((n) => ({ ok: true, value: n }));
    },
    { durability: { sync: disk.sync, ...options }, observer: stats },
  );
  const answered: number[] = [];
  const submit = (n: number) => gc.submit(n).then((v) => void answered.push(v));
  return { gc, stats, batches, disk, answered, submit };
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
    assert.deepEqual(
      results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
      [10, 20, 'three', 40],
    );
  });

  it('fails the whole batch when the commit throws, and keeps working afterwards', async () => {
    let fail = true;
    const gc = new GroupCommit<number, number>((inputs) => {
      if (fail) throw new Error('disk full');
      return inputs.map((n) => ({ ok: true, value: n }));
    });
    const r = await Promise.allSettled([gc.submit(1), gc.submit(2)]);
    assert.deepEqual(
      r.map((x) => x.status),
      ['rejected', 'rejected'],
    );
    fail = false;
    assert.equal(await gc.submit(5), 5);
  });

  it('splits oversized batches and never answers before the commit', async () => {
    const sizes: number[] = [];
    let committed = 0;
    const gc = new GroupCommit<number, number>(
      (inputs) => {
        sizes.push(inputs.length);
        committed += inputs.length;
        return inputs.map(() => ({ ok: true, value: committed }));
      },
      { maxBatch: 10 },
    );
    const answers = await Promise.all(Array.from({ length: 25 }, (_, i) => gc.submit(i)));
    assert.deepEqual(sizes, [10, 10, 5]);
    answers.forEach((committedWhenAnswered, i) => {
      assert.ok(committedWhenAnswered >= i + 1);
    });
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

  it('with two syncs allowed, commits during a sync and starts a second; a sync answers everything committed before it began, in whatever order the syncs end', async () => {
    const { gc, stats, batches, disk, answered, submit } = recorded({ maxSyncsInFlight: 2 });
    const first = submit(1);
    await turn();
    assert.deepEqual(batches, [[1]]);
    const second = submit(2);
    await turns(2);
    assert.deepEqual(batches, [[1], [2]], 'a free sync lets the next submission commit after a turn without submissions');
    assert.equal(disk.started.length, 2, 'and its sync starts while the first is in flight');
    assert.deepEqual(disk.started[1]!.committedBefore, [1, 2]);
    const third = submit(3);
    const fourth = submit(4);
    await turns(2);
    assert.deepEqual(batches, [[1], [2]], 'with both syncs busy, nothing is committed');
    // The second sync ends first: it began after both commits, so both are durable.
    disk.started[1]!.end();
    await Promise.all([first, second]);
    assert.deepEqual(answered, [1, 2]);
    await turns(2);
    assert.deepEqual(batches, [[1], [2], [3, 4]], 'the submissions made meanwhile share one commit, beside the first sync still in flight');
    assert.equal(disk.started.length, 3);
    assert.deepEqual(disk.started[2]!.committedBefore, [1, 2, 3, 4]);
    disk.started[0]!.end();
    await turn();
    assert.deepEqual(answered, [1, 2], 'the first sync, ending last, answers nothing more: it began before 3 and 4');
    disk.started[2]!.end();
    await Promise.all([third, fourth]);
    assert.deepEqual(answered, [1, 2, 3, 4]);
    assert.equal(stats.overlappedSyncs, 2);
    assert.equal(gc.busy(), false);
  });

  it('beside a sync in flight, commits only after a turn in which nothing new was submitted', async () => {
    const { gc, batches, disk, answered, submit } = recorded({ maxSyncsInFlight: 2 });
    const first = submit(1);
    await turn();
    assert.equal(disk.started.length, 1);
    // A wave of clients coming back over three turns, as after a sync answers them together.
    const wave: Promise<void>[] = [];
    for (const n of [2, 3, 4]) {
      wave.push(submit(n));
      await turn();
    }
    assert.deepEqual(batches, [[1]], 'while submissions keep arriving, nothing is committed beside the sync');
    await turn();
    assert.deepEqual(batches, [[1], [2, 3, 4]], 'a turn without submissions commits the wave as one batch');
    assert.equal(disk.started.length, 2, 'and starts its sync beside the first');
    disk.started[0]!.end();
    await first;
    disk.started[1]!.end();
    await Promise.all(wave);
    assert.deepEqual(answered, [1, 2, 3, 4]);
    assert.equal(gc.busy(), false);
  });

  it('a sync that began before a barrier may end after it: whenNoSyncInFlight waits for it', async () => {
    const { gc, disk, submit } = recorded({ maxSyncsInFlight: 2 });
    const first = submit(1);
    await turn();
    const second = submit(2);
    await turns(2);
    assert.equal(disk.started.length, 2);
    let barrierDone = false;
    const barrier = gc.barrier().then(() => {
      barrierDone = true;
    });
    disk.started[1]!.end();
    await Promise.all([first, second]);
    assert.equal(disk.started.length, 3, 'the barrier takes the freed sync');
    disk.started[2]!.end();
    await barrier;
    assert.ok(barrierDone);
    let idle = false;
    const noSync = gc.whenNoSyncInFlight().then(() => {
      idle = true;
    });
    await turns(2);
    assert.equal(idle, false, 'the first sync, begun before the barrier, is still in flight');
    disk.started[0]!.end();
    await noSync;
    assert.ok(idle);
    await gc.whenNoSyncInFlight();
  });

  it('while the durability asks for quiet, commits nothing during a sync and runs one sync at a time', async () => {
    let quiet = true;
    const { gc, batches, disk, answered, submit } = recorded({ maxSyncsInFlight: 2, quiet: () => quiet });
    const first = submit(1);
    await turn();
    const second = submit(2);
    await turn();
    assert.deepEqual(batches, [[1]], 'nothing is committed during the sync');
    assert.equal(disk.started.length, 1);
    quiet = false;
    disk.started[0]!.end();
    await first;
    await turn();
    assert.deepEqual(batches, [[1], [2]]);
    const third = submit(3);
    await turns(2);
    assert.deepEqual(batches, [[1], [2], [3]], 'no longer quiet: two syncs in flight again');
    assert.equal(disk.started.length, 3);
    disk.started[2]!.end();
    await Promise.all([second, third]);
    assert.deepEqual(answered, [1, 2, 3]);
    disk.started[1]!.end();
    assert.equal(gc.busy(), false);
  });

  it('a failed sync fails every unanswered batch, even one that a sync still in flight would cover, and what is pending', async () => {
    const { gc, batches, disk, submit } = recorded({ maxSyncsInFlight: 2 });
    const first = submit(1);
    await turn();
    const second = submit(2);
    await turns(2);
    const third = submit(3);
    await turn();
    assert.equal(disk.started.length, 2);
    disk.started[0]!.end(new Error('EIO'));
    await assert.rejects(first, /EIO/);
    await assert.rejects(second, /EIO/, 'the error may be the only report of its pages, so the other sync proves nothing');
    await assert.rejects(third, /EIO/, 'a pending submission fails too');
    disk.started[1]!.end();
    await turn();
    await assert.rejects(gc.submit(4), /EIO/, 'and so does every later one');
    assert.deepEqual(batches, [[1], [2]], 'nothing is committed after a failed sync');
    assert.equal(gc.busy(), false);
  });

  it('a barrier during a sync waits for the next sync; a failed sync fails its cohort and everything after', async () => {
    const committed: number[] = [];
    const disk = manualSync(() => committed);
    const gc = new GroupCommit<number, number>(
      (inputs) => {
        committed.push(...inputs);
        return inputs.map((n) => ({ ok: true, value: n }));
      },
      { durability: { sync: disk.sync } },
    );
    const first = gc.submit(1);
    await turn();
    let barrierDone = false;
    const barrier = gc.barrier().then(() => {
      barrierDone = true;
    });
    const second = gc.submit(2);
    disk.started[0]!.end();
    assert.equal(await first, 1);
    assert.equal(barrierDone, false, 'a barrier is not covered by a sync that started before it');
    assert.equal(disk.started.length, 2, 'the barrier starts the next sync as soon as the first ends');
    disk.started[1]!.end(new Error('EIO'));
    await barrier.then(
      () => assert.fail('the barrier must fail with its sync'),
      (e: Error) => assert.equal(e.message, 'EIO'),
    );
    await assert.rejects(second, /EIO/, 'a submission not yet committed when the sync failed fails too');
    await assert.rejects(gc.submit(3), /EIO/, 'and so does every later one');
    assert.deepEqual(committed, [1], 'nothing is committed after a failed sync');
  });
});
