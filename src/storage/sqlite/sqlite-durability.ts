// How the SQLite store's commits become durable (design.md, "Durability: group commit"). A
// transaction commits into the WAL without waiting for the disk (synchronous=NORMAL), then the group
// commit fdatasyncs the WAL file off the event loop, and nothing is answered before an fdatasync that
// started after its commit has returned: a 2xx survives kill -9 and a power cut, exactly as with
// synchronous=FULL, but the event loop keeps serving requests while the disk works. Checkpoints run
// in the completion of those fdatasyncs (checkpointer.ts), keeping SQLite's order: WAL durable,
// frames copied, database file durable, and only then may the WAL be restarted over them.
import { existsSync, fdatasync, openSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { type Log, SILENT_LOG } from '../../domain/ports.js';
import { Checkpointer, type CheckpointerOptions, type SyncFile } from './checkpointer.js';
import { GroupCommit, GroupCommitStats, type ItemOutcome } from './group-commit.js';

/**
 * WAL fdatasyncs in flight at once (group-commit.ts), each on a descriptor of its own. Linux
 * reports a writeback error once to each open file description (errseq), so a sync on its own
 * descriptor sees every error since that descriptor's previous sync: two fdatasyncs sharing one
 * descriptor could report an error to only one of them, and the other could acknowledge lost data.
 */
const WAL_SYNCS_IN_FLIGHT = 2;

export interface DurabilityOptions {
  checkpoint?: CheckpointerOptions | undefined;
  /** fdatasync of the WAL; tests hold it to have two in flight at once. */
  syncWal?: SyncFile | undefined;
  log?: Log | undefined;
  /** Log the group commit's and checkpointer's counters every second while they change. */
  logGroupCommitStats?: boolean | undefined;
}

export interface WiredCommit<I, R> {
  readonly appends: GroupCommit<I, R>;
  /** Checkpoints the WAL after its fdatasyncs; undefined for :memory:. */
  readonly checkpointer: Checkpointer | undefined;
  /** Descriptors of the WAL file, one per fdatasync in flight; empty for :memory: (nothing to sync). */
  readonly walFds: number[];
  /** Kept only with RA_DEBUG_GROUP_COMMIT: timing every commit and sync is not free on the hot path. */
  readonly stats: GroupCommitStats | undefined;
}

/** The group commit over `commit`, with the WAL's fdatasyncs and checkpoints when the database is a file. */
export function wireGroupCommit<I, R>(
  db: Database.Database,
  path: string,
  opts: DurabilityOptions,
  commit: (inputs: readonly I[]) => ItemOutcome<R>[],
  onDurable: (outcomes: readonly ItemOutcome<R>[]) => void,
): WiredCommit<I, R> {
  // The WAL exists while this connection is open and keeps its inode (it is restarted in place
  // after checkpoints, only deleted when the last connection closes), so these descriptors serve.
  const wal = `${path}-wal`;
  const walFds = path !== ':memory:' && existsSync(wal) ? Array.from({ length: WAL_SYNCS_IN_FLIGHT }, () => openSync(wal, 'r+')) : [];
  const stats = opts.logGroupCommitStats ? new GroupCommitStats() : undefined;
  let appends: GroupCommit<I, R>;
  let checkpointer: Checkpointer | undefined;
  if (walFds.length === 0) {
    // Nothing to fdatasync separately: every commit stays synchronous=FULL.
    appends = new GroupCommit(commit, { observer: stats });
  } else {
    db.pragma('synchronous = NORMAL');
    // The checkpointer keeps the WAL short; this connection checkpoints by itself (with its own
    // fsyncs, on the event loop) only if the WAL grows far past that, as a backstop.
    db.pragma('wal_autocheckpoint = 100000');
    const cp = new Checkpointer(path, opts.checkpoint);
    checkpointer = cp;
    const totalChanges = db.prepare<[], number>('SELECT total_changes()').pluck();
    const idleFds = [...walFds];
    const syncWal: SyncFile = opts.syncWal ?? ((fd, done) => fdatasync(fd, (err) => done(err)));
    appends = new GroupCommit(commit, {
      observer: stats,
      durability: {
        maxSyncsInFlight: walFds.length,
        sync: (done) => {
          // The group commit never has more syncs in flight than there are descriptors.
          const fd = idleFds.pop() as number;
          // Every committed write changes rows, so an unchanged count means the WAL holds nothing
          // committed after this fdatasync began: all of it is on disk when it returns.
          const changesBefore = totalChanges.get();
          syncWal(fd, (err) => {
            idleFds.push(fd);
            if (err) return done(err);
            cp.afterWalSync(totalChanges.get() === changesBefore, done);
          });
        },
        onDurable: (_inputs, outcomes) => onDurable(outcomes),
        quiet: () => cp.wantsQuietSync(),
      },
    });
  }
  // Debugging aid (RA_DEBUG_GROUP_COMMIT=1): the group commit's counters every second while it
  // works (how many batches, how large, how long commits and syncs take).
  if (stats) {
    const log = opts.log ?? SILENT_LOG;
    let last = '';
    setInterval(() => {
      const counters = { groupCommit: stats, checkpointer: checkpointer?.stats };
      const line = JSON.stringify(counters);
      if (line !== last) log.info(counters, 'group commit counters');
      last = line;
    }, 1000).unref();
  }
  return { appends, checkpointer, walFds, stats };
}
