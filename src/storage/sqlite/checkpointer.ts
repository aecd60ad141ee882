// WAL checkpoints on the event loop's thread, with both of their disk waits off it.
//
// A checkpoint must keep SQLite's order: the WAL frames it copies are on disk; it copies them into
// the database file; that file is on disk; only then may a writer restart the WAL over those frames
// (until then they are the only durable copy of those pages). SQLite's own checkpoint does this
// with two fsyncs inside the call, and on the event loop those stalled every request behind them;
// on a thread of its own it cost a worker isolate's memory (bench/README.md, "Group commit").
//
// Here the group commit's fdatasync of the WAL is the first wait, and this runs in its completion:
//  1. WAL durable: only if nothing was committed since that fdatasync began (the connection's
//     total_changes() is unchanged), so every frame in the WAL is on disk. Otherwise it waits for a
//     later sync.
//  2. A read transaction is opened on a second connection. SQLite restarts the WAL only once no
//     reader holds a mark in it, so from here on writers append to the WAL instead of overwriting it.
//  3. PRAGMA wal_checkpoint(PASSIVE) on a third connection with synchronous=OFF copies the frames
//     into the database file and syncs nothing.
//  4. fdatasync of the database file on the thread pool; when it returns, the read transaction
//     ends and the sync completes. Meanwhile the group commit commits nothing and runs one sync at
//     a time (`wantsQuietSync`), so its next commit finds the whole WAL copied and starts it over;
//     other writes meanwhile just append to the WAL, which then starts over later.
// A failed fdatasync of the database file keeps the read transaction open for good (the WAL stays
// the durable copy) and fails the sync, which fails the store.

import { closeSync, fdatasync, openSync } from 'node:fs';
import Database from 'better-sqlite3';

/**
 * At most one checkpoint this often. Each adds a database fdatasync to one sync, during which the
 * group commit waits; between checkpoints the WAL grows by what was written meanwhile, and a page
 * rewritten many times is copied once. The value was measured (bench/README.md, "Group commit").
 */
const CHECKPOINT_INTERVAL_MS = 250;

export type SyncFile = (fd: number, done: (error: Error | null) => void) => void;

export interface CheckpointerOptions {
  intervalMs?: number;
  /** fdatasync of the database file; tests hold it to look at the WAL while it is in flight. */
  syncDatabase?: SyncFile;
}

export class Checkpointer {
  private readonly copier: Database.Database;
  private readonly holder: Database.Database;
  private readonly beginHold: Database.Statement;
  private readonly readInHold: Database.Statement;
  private readonly endHold: Database.Statement;
  private readonly checkpoint: Database.Statement;
  private readonly dbFd: number;
  private readonly intervalMs: number;
  private readonly syncDatabase: SyncFile;
  private lastAt = -Infinity;
  private failed: Error | undefined;
  private closed = false;
  private syncingDatabase = false;
  readonly stats = { checkpoints: 0, skippedUndurable: 0, failedCopies: 0, copyMs: 0, syncMs: 0, maxSyncMs: 0 };

  constructor(path: string, opts: CheckpointerOptions = {}) {
    this.intervalMs = opts.intervalMs ?? CHECKPOINT_INTERVAL_MS;
    this.syncDatabase = opts.syncDatabase ?? ((fd, done) => fdatasync(fd, (err) => done(err)));
    this.copier = new Database(path);
    this.copier.pragma('synchronous = OFF');
    this.holder = new Database(path, { readonly: true });
    this.beginHold = this.holder.prepare('BEGIN');
    // Any read starts the transaction and takes its mark in the WAL.
    this.readInHold = this.holder.prepare('SELECT 1 FROM sqlite_schema LIMIT 1');
    this.endHold = this.holder.prepare('COMMIT');
    this.checkpoint = this.copier.prepare('PRAGMA wal_checkpoint(PASSIVE)');
    this.dbFd = openSync(path, 'r+');
  }

  /**
   * True while nothing should be committed during a sync in flight: a checkpoint is due (a commit
   * overlapping the WAL fdatasync would make it skip, and with overlapping syncs under load every
   * sync would be overlapped), or its database fdatasync is running (a commit then would keep the
   * WAL from starting over, and under steady load it would never).
   */
  wantsQuietSync(): boolean {
    return this.syncingDatabase || (!this.failed && this.isDue(performance.now()));
  }

  private isDue(now: number): boolean {
    return now - this.lastAt >= this.intervalMs;
  }

  /**
   * Runs from the completion of an fdatasync of the WAL; `walDurable` says nothing was committed
   * since it began. If a checkpoint is due, copies the WAL into the database file and calls `done`
   * once that file is on disk; otherwise calls `done` at once.
   */
  afterWalSync(walDurable: boolean, done: (error: Error | null) => void): void {
    if (this.failed) return done(this.failed);
    const now = performance.now();
    // With two WAL syncs in flight, the other may end while this checkpoint's database fdatasync runs.
    if (this.syncingDatabase || !this.isDue(now)) return done(null);
    if (!walDurable) {
      this.stats.skippedUndurable++;
      return done(null);
    }
    this.lastAt = now;
    this.beginHold.run();
    this.readInHold.get();
    const t0 = performance.now();
    try {
      // PASSIVE never waits for anyone: a busy checkpoint copies what it can and says so in its row.
      this.checkpoint.get();
      this.stats.checkpoints++;
    } catch {
      // An I/O error, possibly after some pages were copied: the database file is synced all the
      // same before the WAL may start over. The next checkpoint tries again.
      this.stats.failedCopies++;
    }
    const t1 = performance.now();
    this.stats.copyMs += t1 - t0;
    this.syncingDatabase = true;
    this.syncDatabase(this.dbFd, (error) => {
      this.syncingDatabase = false;
      const ms = performance.now() - t1;
      this.stats.syncMs += ms;
      if (ms > this.stats.maxSyncMs) this.stats.maxSyncMs = ms;
      // Closed meanwhile (only after the group commit failed: otherwise close waits for this sync).
      if (this.closed) return done(error ?? new Error('store is closed'));
      if (error) {
        this.failed = error;
        return done(error);
      }
      this.endHold.run();
      done(null);
    });
  }

  /** Before the main connection closes (it is then the last, and checkpoints and removes the WAL). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.holder.inTransaction && !this.failed) this.endHold.run();
    this.holder.close();
    this.copier.close();
    closeSync(this.dbFd);
  }
}
