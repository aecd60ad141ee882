// WAL checkpoints (src/storage/sqlite/checkpointer.ts), on real files. What they must never do is
// let the WAL be restarted over frames whose pages are not yet durable in the database file, nor
// copy frames that are not yet durable in the WAL; what they must do is keep the WAL short.
// The WAL header (https://www.sqlite.org/fileformat.html#the_write_ahead_log) tells a restart: its
// checkpoint sequence number grows by one each time the WAL starts over from its beginning.
import assert from 'node:assert/strict';
import { fdatasync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { newEventId } from '../../src/domain/credentials.js';
import type { NewEvent } from '../../src/domain/model.js';
import { INBOX_TRUST_JSON } from '../../src/domain/trust.js';
import type { SyncFile } from '../../src/storage/sqlite/checkpointer.js';
import { SqliteStore } from '../../src/storage/sqlite/sqlite-store.js';
import { onlySqlite, range } from '../helpers.js';
import { newAddress, PAGE_BYTES, RATE } from './store-records.js';

const LIMITS = { maxEventsPerAddress: 1_000_000, maxBytesPerAddress: 1 << 30 };
const newEvent = (addressId: string, data: unknown): NewEvent => ({
  id: newEventId(),
  addressId,
  type: 'test',
  source: 'test',
  data: JSON.stringify(data),
  metadata: null,
  dedupeKey: null,
  trust: INBOX_TRUST_JSON,
  createdAt: Date.now(),
});

/** The WAL header's checkpoint sequence number: it grows by one at each restart of the WAL. */
const walRestarts = (path: string) => readFileSync(`${path}-wal`).readUInt32BE(12);
const walBytes = (path: string) => statSync(`${path}-wal`).size;
/**
 * Frames of the WAL's current generation: the run of frames from its start whose salts are the
 * header's (a restart writes new salts, and frames past the new end keep the old ones).
 */
function walFrames(path: string): number {
  const wal = readFileSync(`${path}-wal`);
  const frameBytes = 24 + wal.readUInt32BE(8);
  let n = 0;
  for (let at = 32; at + frameBytes <= wal.length; at += frameBytes, n++) {
    if (wal.readUInt32BE(at + 8) !== wal.readUInt32BE(16) || wal.readUInt32BE(at + 12) !== wal.readUInt32BE(20)) break;
  }
  return n;
}

/**
 * An fdatasync that can be held: while held, calls wait in `held` (with their descriptors in
 * `heldFds`) until release(), or one at a time with releaseOne(i).
 */
function holdableSync() {
  const held: (() => void)[] = [];
  const heldFds: number[] = [];
  let holding = false;
  const sync: SyncFile = (fd, done) => {
    const run = () => fdatasync(fd, (err) => done(err));
    if (!holding) return run();
    held.push(run);
    heldFds.push(fd);
  };
  return {
    sync,
    held,
    heldFds,
    hold: () => {
      holding = true;
    },
    release: () => {
      holding = false;
      for (const run of held.splice(0)) run();
    },
    releaseOne: (i: number) => {
      const run = held[i];
      held[i] = () => {};
      run?.();
    },
  };
}

/** Waits until `check` holds, polling the event loop (the fdatasyncs complete on the thread pool). */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 2));
  }
  assert.fail(`timed out waiting until ${what}`);
}

describe('SQLite store: WAL checkpoints', { skip: onlySqlite }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'ra-sqlite-checkpoint-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('keep the WAL short: once its frames are in the database file it starts over, and nothing is lost', async () => {
    const path = join(dir, 'bounded.sqlite');
    let store = new SqliteStore(path, { checkpoint: { intervalMs: 0 } });
    const a = newAddress();
    try {
      await store.createAddress(a, { ...RATE, now: Date.now() });
      const restartsBefore = walRestarts(path);
      // The file keeps the largest size the WAL ever had, the schema migrations' included: what the
      // deliveries add to it is what must stay small.
      const bytesBefore = walBytes(path);
      // 200 rounds of 20 deliveries, each round one batch, one fdatasync and one checkpoint.
      for (const round of range(1, 200)) {
        await Promise.all(range(1, 20).map((i) => store.appendEvent(newEvent(a.id, [round, i]), LIMITS)));
      }
      assert.ok(store.checkpointer!.stats.checkpoints >= 200, `a checkpoint after every sync (${store.checkpointer!.stats.checkpoints})`);
      assert.ok(walRestarts(path) - restartsBefore >= 100, `the WAL started over after checkpoints (${walRestarts(path) - restartsBefore} times)`);
      // 4,000 events of ~100 bytes went through it; restarted, it stays at the size of a few batches.
      assert.ok(walBytes(path) - bytesBefore < 256 * 1024, `the WAL stays short (${bytesBefore} -> ${walBytes(path)} bytes)`);
      assert.ok(walFrames(path) * (24 + 4096) < 256 * 1024, `its current run is a few batches (${walFrames(path)} frames)`);
    } finally {
      await store.close();
    }
    // Reopened: every event is there, in order, whatever was in the WAL or the database file.
    store = new SqliteStore(path);
    try {
      let after = 0;
      let count = 0;
      for (;;) {
        const page = (await store.listEvents(a.id, after, 100, PAGE_BYTES))!;
        for (const e of page.events) assert.equal(e.sequence, ++count);
        if (!page.hasMore) break;
        after = page.events.at(-1)!.sequence;
      }
      assert.equal(count, 4000);
    } finally {
      await store.close();
    }
  });

  it('under steady load, with slow fdatasyncs of the database file, the WAL still starts over', async () => {
    const path = join(dir, 'steady.sqlite');
    // Each database fdatasync takes 5 ms more, as on a busy disk: long enough for deliveries to
    // be pending while it runs, when the group commit could start a second WAL sync beside it.
    const slowDatabase: SyncFile = (fd, done) => setTimeout(() => fdatasync(fd, (err) => done(err)), 5);
    const store = new SqliteStore(path, { checkpoint: { intervalMs: 10, syncDatabase: slowDatabase } });
    try {
      const a = newAddress();
      await store.createAddress(a, { ...RATE, now: Date.now() });
      const restartsBefore = walRestarts(path);
      const checkpointsBefore = store.checkpointer!.stats.checkpoints;
      const end = Date.now() + 600;
      let n = 0;
      // 20 writers, each delivering again 0-3 ms after its answer, as HTTP clients do: answered
      // together, they come back spread out, so deliveries are pending during most syncs.
      await Promise.all(
        range(1, 20).map(async () => {
          while (Date.now() < end) {
            await store.appendEvent(newEvent(a.id, n++), LIMITS);
            await new Promise((r) => setTimeout(r, Math.random() * 3));
          }
        }),
      );
      const checkpoints = store.checkpointer!.stats.checkpoints - checkpointsBefore;
      const restarts = walRestarts(path) - restartsBefore;
      assert.ok(checkpoints >= 10, `checkpoints ran (${checkpoints})`);
      // A commit during a checkpoint's database fdatasync leaves frames past the copied ones, and the
      // WAL starts over only after a checkpoint without one: with commits allowed there (a late
      // commit during the sync, in an earlier design), it did after 21-25 of 55 checkpoints;
      // without, after 54 of 55.
      assert.ok(restarts >= (checkpoints * 3) / 4, `the WAL started over after most checkpoints (${restarts} of ${checkpoints})`);
    } finally {
      await store.close();
    }
  });

  it('while the database file is being synced, writes append to the WAL and never restart it over the copied frames', async () => {
    const path = join(dir, 'held.sqlite');
    const db = holdableSync();
    const store = new SqliteStore(path, { checkpoint: { intervalMs: 0, syncDatabase: db.sync } });
    try {
      const a = newAddress();
      await store.createAddress(a, { ...RATE, now: Date.now() });
      const first = await store.appendEvent(newEvent(a.id, 'first'), LIMITS);
      assert.equal(first.kind, 'created');
      const firstId = first.kind === 'created' ? first.event.id : '';

      // This delivery's sync copies the whole WAL into the database file, whose fdatasync is held.
      db.hold();
      const checkpoints = store.checkpointer!.stats.checkpoints;
      const second = store.appendEvent(newEvent(a.id, 'second'), LIMITS);
      await until(() => db.held.length === 1, 'the database fdatasync is in flight');
      assert.equal(store.checkpointer!.stats.checkpoints, checkpoints + 1, "it is a checkpoint's fdatasync");
      const restarts = walRestarts(path);
      const frames = walFrames(path);

      // A write now finds every frame copied. Were the WAL restarted, it would overwrite frames that
      // are still the only durable copy of their pages (the database file is not synced yet).
      const ack = store.ackEvent(a.id, firstId, Date.now());
      await new Promise((r) => setTimeout(r, 20));
      assert.equal(walRestarts(path), restarts, 'no restart while the database file is not durable');
      assert.ok(walFrames(path) > frames, `the write went after the last frame instead (${frames} -> ${walFrames(path)})`);

      db.release();
      assert.equal((await second).kind, 'created');
      assert.ok((await ack)?.acknowledgedAt, 'the acknowledgement is durable and answered');
      // Once the database file is durable, the next checkpoint lets the WAL start over.
      await store.appendEvent(newEvent(a.id, 'third'), LIMITS);
      await store.appendEvent(newEvent(a.id, 'fourth'), LIMITS);
      assert.ok(walRestarts(path) > restarts, 'the WAL restarts once the copied frames are durable in the database file');
      assert.deepEqual(
        (await store.listEvents(a.id, 0, 10, PAGE_BYTES))!.events.map((e) => JSON.parse(e.data)),
        ['first', 'second', 'third', 'fourth'],
      );
    } finally {
      db.release(); // a failed assertion must not leave close() waiting for a held sync
      await store.close();
    }
  });

  it('two WAL fdatasyncs in flight each use a descriptor of their own, both of the WAL file', async () => {
    // Linux reports a writeback error once per open file description: two syncs sharing one could
    // see it in only one of them, and the other would answer deliveries whose pages were lost.
    const path = join(dir, 'two-syncs.sqlite');
    const wal = holdableSync();
    const store = new SqliteStore(path, { checkpoint: { intervalMs: 60_000 }, syncWal: wal.sync });
    try {
      const a = newAddress();
      await store.createAddress(a, { ...RATE, now: Date.now() });
      wal.hold();
      const first = store.appendEvent(newEvent(a.id, 'first'), LIMITS);
      await until(() => wal.held.length === 1, 'the first sync is in flight');
      const second = store.appendEvent(newEvent(a.id, 'second'), LIMITS);
      await until(() => wal.held.length === 2, 'a second sync starts beside it');
      const [fd1, fd2] = wal.heldFds;
      assert.notEqual(fd1, fd2, 'the two syncs share no descriptor');
      for (const fd of [fd1, fd2]) assert.equal(readlinkSync(`/proc/self/fd/${fd}`), `${path}-wal`);
      wal.release();
      assert.deepEqual([(await first).kind, (await second).kind], ['created', 'created']);
      assert.deepEqual(
        (await store.listEvents(a.id, 0, 10, PAGE_BYTES))!.events.map((e) => JSON.parse(e.data)),
        ['first', 'second'],
      );
    } finally {
      wal.release();
      await store.close();
    }
  });

  it('a WAL sync that ends while a checkpoint syncs the database file starts no second checkpoint', async () => {
    const path = join(dir, 'sync-during-checkpoint.sqlite');
    const wal = holdableSync();
    const db = holdableSync();
    const intervalMs = 200;
    const store = new SqliteStore(path, { checkpoint: { intervalMs, syncDatabase: db.sync }, syncWal: wal.sync });
    try {
      const a = newAddress();
      await store.createAddress(a, { ...RATE, now: Date.now() }); // its sync checkpoints: none is due for 200 ms
      wal.hold();
      // Sync A covers a delivery; sync B a barrier that changed nothing, so neither overlaps a commit.
      const delivered = store.appendEvent(newEvent(a.id, 'first'), LIMITS);
      await until(() => wal.held.length === 1, 'sync A is in flight');
      const deleted = store.deleteAddress('addr_none');
      await until(() => wal.held.length === 2, 'sync B starts beside it');
      const checkpoints = store.checkpointer!.stats.checkpoints;
      await new Promise((r) => setTimeout(r, intervalMs + 10));
      db.hold();
      wal.releaseOne(1);
      await until(() => db.held.length === 1, "B's end checkpoints, and the database fdatasync is in flight");
      assert.equal(store.checkpointer!.stats.checkpoints, checkpoints + 1);
      // A checkpoint is due again when A ends; another one now would open the read hold twice.
      await new Promise((r) => setTimeout(r, intervalMs + 10));
      wal.releaseOne(0);
      assert.equal((await delivered).kind, 'created', 'A answers the delivery it covers');
      assert.equal(store.checkpointer!.stats.checkpoints, checkpoints + 1, 'and starts no checkpoint');
      db.release();
      assert.equal(await deleted, false);
      assert.equal((await store.listEvents(a.id, 0, 10, PAGE_BYTES))!.events.length, 1);
    } finally {
      wal.release();
      db.release();
      await store.close();
    }
  });

  it('a failed WAL fdatasync fails the delivery it covers, keeps its event hidden, and fails the store', async () => {
    // After a failed fsync the kernel may have dropped the pages: a later successful one proves
    // nothing, so no 2xx may follow, and the event must not be read (its sequence could come back).
    const path = join(dir, 'failed-wal-sync.sqlite');
    let failing = false;
    const syncWal: SyncFile = (fd, done) => (failing ? done(Object.assign(new Error('EIO: simulated'), { code: 'EIO' })) : fdatasync(fd, (err) => done(err)));
    const store = new SqliteStore(path, { checkpoint: { intervalMs: 60_000 }, syncWal });
    try {
      const a = newAddress();
      await store.createAddress(a, { ...RATE, now: Date.now() });
      await store.appendEvent(newEvent(a.id, 'durable'), LIMITS);
      failing = true;
      await assert.rejects(store.appendEvent(newEvent(a.id, 'lost'), LIMITS), /EIO/);
      assert.deepEqual(
        (await store.listEvents(a.id, 0, 10, PAGE_BYTES))!.events.map((e) => JSON.parse(e.data)),
        ['durable'],
        'the committed but never durable event stays invisible',
      );
      await assert.rejects(store.ping(), /EIO/, 'readiness reports the failure');
      failing = false;
      await assert.rejects(store.appendEvent(newEvent(a.id, 'later'), LIMITS), /EIO/, 'and every later write fails, whatever the disk says now');
    } finally {
      await store.close();
    }
  });

  it('copy no frame committed after the WAL fdatasync began: such a sync is followed by no checkpoint', async () => {
    const store = new SqliteStore(join(dir, 'undurable.sqlite'), { checkpoint: { intervalMs: 0 } });
    try {
      const a = newAddress();
      await store.createAddress(a, { ...RATE, now: Date.now() });
      const first = await store.appendEvent(newEvent(a.id, 'first'), LIMITS);
      const firstId = first.kind === 'created' ? first.event.id : '';
      const stats = { ...store.checkpointer!.stats };
      // The delivery's batch commits in a setImmediate and starts the WAL's fdatasync; the ack,
      // queued after it in the same phase, commits while that fdatasync is in flight (its
      // completion comes in a later phase of the event loop).
      const delivered = store.appendEvent(newEvent(a.id, 'second'), LIMITS);
      const acked = new Promise((resolve, reject) => setImmediate(() => store.ackEvent(a.id, firstId, Date.now()).then(resolve, reject)));
      await Promise.all([delivered, acked]);
      assert.equal(store.checkpointer!.stats.skippedUndurable, stats.skippedUndurable + 1, 'the sync that the ack overlapped did not checkpoint');
      // The ack's own barrier waited for the next sync, which nothing overlapped: that one checkpoints.
      assert.equal(store.checkpointer!.stats.checkpoints, stats.checkpoints + 1);
    } finally {
      await store.close();
    }
  });
});
