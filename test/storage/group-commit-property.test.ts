// The group commit's invariants (the header of src/storage/sqlite/group-commit.ts) under random
// interleavings: submissions in bursts, event-loop turns, syncs that end in any order, a quiet
// period switched on and off, item errors, and a sync that fails.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { GroupCommit } from '../../src/storage/sqlite/group-commit.js';

type Command = { kind: 'submit'; count: number } | { kind: 'turn' } | { kind: 'end'; pick: number; fail: boolean } | { kind: 'quiet'; on: boolean };

const command: fc.Arbitrary<Command> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('submit' as const), count: fc.integer({ min: 1, max: 6 }) }) },
  { weight: 3, arbitrary: fc.constant({ kind: 'turn' as const }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('end' as const), pick: fc.nat(), fail: fc.integer({ min: 0, max: 9 }).map((x) => x === 0) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('quiet' as const), on: fc.boolean() }) },
);

const turn = () => new Promise((r) => setImmediate(r));

interface Sync {
  startedAt: number;
  endedAt?: number;
  failed: boolean;
  done: (e: Error | null) => void;
}
interface Item {
  n: number;
  submittedAt: number;
  committedAt?: number;
  settledAt?: number;
  outcome?: 'ok' | 'item-error' | 'rejected';
}

async function run(commands: Command[], maxSyncsInFlight: number): Promise<void> {
  let clock = 0;
  let quiet = false;
  let failedAt: number | undefined;
  const syncs: Sync[] = [];
  const items: Item[] = [];
  const inFlight = () => syncs.filter((s) => s.endedAt === undefined);
  const violations: string[] = [];

  const gc = new GroupCommit<number, number>(
    (inputs) => {
      const now = clock++;
      if (failedAt !== undefined) violations.push(`commit after the failed sync: ${inputs.join(',')}`);
      if (quiet && inFlight().length > 0) violations.push('commit beside a sync while quiet');
      for (const n of inputs) items[n]!.committedAt = now;
      // Invariant 4: every seventh item fails on its own.
      return inputs.map((n) => (n % 7 === 6 ? { ok: false, error: new Error(`item ${n}`) } : { ok: true, value: n }));
    },
    {
      durability: {
        maxSyncsInFlight,
        quiet: () => quiet,
        sync: (done) => {
          const running = inFlight().length;
          // Invariant 3.
          if (running >= maxSyncsInFlight) violations.push(`sync started with ${running} in flight`);
          if (quiet && running > 0) violations.push('a second sync started while quiet');
          syncs.push({ startedAt: clock++, failed: false, done });
        },
      },
    },
  );

  const submit = () => {
    const n = items.length;
    const item: Item = { n, submittedAt: clock++ };
    items.push(item);
    gc.submit(n).then(
      () => {
        item.settledAt = clock++;
        item.outcome = 'ok';
      },
      (e: Error) => {
        item.settledAt = clock++;
        item.outcome = e.message === `item ${n}` ? 'item-error' : 'rejected';
      },
    );
  };
  const end = (s: Sync, fail: boolean) => {
    s.endedAt = clock++;
    s.failed = fail;
    if (fail) failedAt ??= s.endedAt;
    s.done(fail ? new Error('EIO') : null);
  };

  for (const c of commands) {
    if (c.kind === 'submit') for (let i = 0; i < c.count; i++) submit();
    else if (c.kind === 'turn') await turn();
    else if (c.kind === 'quiet') quiet = c.on;
    else {
      const open = inFlight();
      if (open.length > 0) end(open[c.pick % open.length]!, c.fail);
    }
    // Let the answers' callbacks run now, so each records the moment it was really answered.
    await Promise.resolve();
  }
  // Drain: end every sync, oldest first, until nothing is left to do.
  quiet = false;
  for (let i = 0; i < 1000 && (gc.busy() || items.some((it) => it.settledAt === undefined)); i++) {
    await turn();
    const open = inFlight();
    if (open.length > 0) end(open[0]!, false);
    await Promise.resolve();
  }

  assert.deepEqual(violations, []);
  for (const it of items) {
    assert.notEqual(it.settledAt, undefined, `item ${it.n} was answered`);
    const failedBeforeDurable =
      failedAt !== undefined && (it.committedAt === undefined || !syncs.some((s) => !s.failed && s.startedAt > it.committedAt! && s.endedAt! < failedAt!));
    if (it.outcome === 'rejected') {
      // Invariant 5: only a failed sync rejects a whole entry, and only one not yet durable.
      assert.ok(failedAt !== undefined && failedBeforeDurable, `item ${it.n} rejected without a failed sync before its durability`);
      continue;
    }
    // Invariant 4: an item error is that item's alone.
    assert.equal(it.outcome, it.n % 7 === 6 ? 'item-error' : 'ok', `item ${it.n}`);
    // Invariant 1: answered after a successful sync that started after its commit had ended.
    assert.ok(it.committedAt !== undefined);
    const covering = syncs.find((s) => !s.failed && s.startedAt > it.committedAt! && s.endedAt !== undefined && s.endedAt < it.settledAt!);
    assert.ok(covering, `item ${it.n} answered at ${it.settledAt} with no completed sync started after its commit at ${it.committedAt}`);
  }
  // Invariant 5: after a failure nothing is answered successfully that was not durable before it.
  if (failedAt !== undefined) {
    for (const it of items.filter((x) => x.submittedAt > failedAt!)) assert.equal(it.outcome, 'rejected', `item ${it.n} submitted after the failure`);
  }
  // Invariant 2: successful answers come in commit order.
  const answered = items.filter((it) => it.outcome === 'ok' || it.outcome === 'item-error').sort((a, b) => a.settledAt! - b.settledAt!);
  for (let i = 1; i < answered.length; i++) {
    assert.ok(answered[i - 1]!.committedAt! <= answered[i]!.committedAt!, `item ${answered[i]!.n} answered before ${answered[i - 1]!.n}, committed earlier`);
  }
}

describe('GroupCommit invariants under random sync completion orders', () => {
  for (const maxSyncsInFlight of [1, 2, 3]) {
    it(`hold with up to ${maxSyncsInFlight} sync(s) in flight`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 60 }), (cmds) => run(cmds, maxSyncsInFlight)),
        { numRuns: 150 },
      );
    });
  }
});
