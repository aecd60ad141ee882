// Embedded store on one SQLite file (better-sqlite3), for a single instance.
//
// Durability: WAL. A transaction commits into the WAL without waiting for the disk
// (synchronous=NORMAL), then the group commit fdatasyncs the WAL file off the event loop, and
// nothing is answered before an fdatasync that started after its commit has returned: a 2xx
// survives kill -9 and a power cut, exactly as with synchronous=FULL, but the event loop keeps
// serving requests while the disk works. Checkpoints run in the completion of those fdatasyncs
// (checkpointer.ts), keeping SQLite's order: WAL durable, frames copied, database file durable, and
// only then may the WAL be restarted over them.
// Every other write (addresses, acks, deletions) also waits for such an fdatasync before returning.
// Ordering: better-sqlite3 is synchronous and this process is the only writer, so every write
// transaction runs alone; sequences are allocated from the address's counters inside the same
// transaction as the insert, hence gapless. The counters live in memory and reach the addresses
// row lazily (sqlite-queue-counters.ts): an append commit writes no addresses page.
// Visibility: an appended event stays invisible to readers until its batch is durable, so a
// reader never sees an event that a power cut could take back (and whose sequence could then be
// reused); reads stop below the oldest batch not yet durable (event-visibility.ts), so what a reader
// sees is always a durable prefix.
// Dedupe: looked up inside that transaction, with a partial unique index as the backstop.
// Caches: address rows and pages of events, dropped on every change this process makes and, through
// PRAGMA data_version, on any other process's commit (sqlite-read-cache.ts).
// Migrations run in the constructor (sqlite-migrations.ts).

import { chmodSync, closeSync, existsSync, fdatasync, mkdirSync, openSync, statfsSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { type ApprovalAnswerRecord, type ApprovalRecord, type ApprovalStep, type ApprovalStepResult, stepDedupeKey } from '../../approvals/approval-model.js';
import { BLOB_CHUNK_BYTES, type BlobName, blobBytes, type StoredBlob } from '../../blobs/event-blob.js';
import type { ClaimBatch, ClaimRequest, Settlement, SettleResult } from '../../claims/claim-rules.js';
import type { ConsumerPositions } from '../../consumers/consumer-positions.js';
import { type EventFilter, SCAN_BYTES, SCAN_EVENTS } from '../../domain/event-filter.js';
import type { AddressRecord, AppendResult, EventPageRecord, EventRecord, NewEvent, RateDecision, ScanPageRecord } from '../../domain/model.js';
import { type Log, SILENT_LOG, type Store, StoreClosedError, type StoreLimits } from '../../domain/ports.js';
import { roomToFree, storedBytes } from '../../domain/queue-quota.js';
import { countAttempt, staleRateWindowsBefore } from '../../domain/rate-window.js';
import type { SubscriptionStore } from '../../push/subscription-store.js';
import type { SenderPolicyStore } from '../../sender-policy/sender-policy-store.js';
import { APPROVAL_COLUMNS, type ApprovalAnswerRow, type ApprovalRow, approvalValues, toAnswer, toApproval } from '../approval-rows.js';
import { filterSql, type ScanRow, SqlParams, scanPage, scanSql } from '../event-filter-sql.js';
import {
  ADDRESS_COLUMNS,
  type AddressRow,
  boundedPageSql,
  cutPage,
  EVENT_COLUMNS,
  EVENT_ID_TIME_SQL,
  type EventRow,
  INSERTED_EVENT_COLUMNS,
  releaseSql,
  toAddress,
  toEvent,
} from '../rows.js';
import { jsonBytesSql, storedBytesSql } from '../stored-bytes-sql.js';
import { Checkpointer, type CheckpointerOptions, type SyncFile } from './checkpointer.js';
import { EventVisibility } from './event-visibility.js';
import { GroupCommit, GroupCommitStats, type ItemOutcome } from './group-commit.js';
import { SqliteClaims } from './sqlite-claims.js';
import { SqliteConsumerPositions } from './sqlite-consumers.js';
import { migrateSqlite } from './sqlite-migrations.js';
import { type QueueCounters, SqliteQueueCounters } from './sqlite-queue-counters.js';
import { type QueueTotals, SqliteQueueTotals } from './sqlite-queue-totals.js';
import { SqliteReadCache } from './sqlite-read-cache.js';
import { SqliteSenderPolicies } from './sqlite-sender-policies.js';
import { SqliteSubscriptions } from './sqlite-subscriptions.js';

/** Prepared statements of filtered scans kept (each filter shape is one). */
const SCAN_STATEMENTS = 64;

/**
 * WAL fdatasyncs in flight at once (group-commit.ts), each on a descriptor of its own. Linux
 * reports a writeback error once to each open file description (errseq), so a sync on its own
 * descriptor sees every error since that descriptor's previous sync: two fdatasyncs sharing one
 * descriptor could report an error to only one of them, and the other could acknowledge lost data.
 */
const WAL_SYNCS_IN_FLIGHT = 2;

/** Thrown inside a pruning item's savepoint to roll back a prune that did not make enough room. */
class QueueFull extends Error {}

interface AppendInput {
  event: NewEvent;
  limits: StoreLimits;
  /** An approval's state change, made in the same transaction as the append (approvalItem). */
  approval?: ApprovalStep;
}

export interface SqliteStoreOptions {
  checkpoint?: CheckpointerOptions;
  /** fdatasync of the WAL; tests hold it to have two in flight at once. */
  syncWal?: SyncFile;
  log?: Log;
  /** Log the group commit's and checkpointer's counters every second while they change. */
  logGroupCommitStats?: boolean;
  /** Free bytes the database's disk must keep for the store to report ready (default 32 MiB). */
  minFreeBytes?: number;
}

/**
 * An address's queue counters while a batch is being written: loaded once per batch, advanced by
 * each item that succeeds, handed back to SqliteQueueCounters once the transaction commits.
 */
interface BatchCounters extends QueueCounters {
  changed: boolean;
  /** Acknowledged events were pruned: the row is written in the batch's transaction (the counters' invariant). */
  pruned: boolean;
}

/** Pages an incremental vacuum gives back per step (1 MiB of 4 KiB pages): a few ms of write lock each. */
const VACUUM_STEP_PAGES = 256;
/** An address's acknowledged events, oldest first, with their stored bytes: what pruning may delete. */
/** The bytes an event row holds in the address's byte quota (domain/queue-quota.ts, storedBytes). */
const STORED_BYTES_SQL = storedBytesSql('sqlite');
export const ACKED_SIZES_SQL = `SELECT sequence, ${STORED_BYTES_SQL} AS bytes
  FROM events WHERE address_id = ? AND acknowledged_at IS NOT NULL ORDER BY sequence`;

/**
 * The database holds hashes, sealed secrets and every event: readable by this user only. A new
 * DATA_DIR is created 0700 and the database file 0600 before SQLite opens it; SQLite creates its WAL
 * and shared-memory files with the database file's mode. An existing file is narrowed to 0600.
 */
function keepPrivate(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  closeSync(openSync(path, 'a', 0o600));
  for (const f of [path, `${path}-wal`, `${path}-shm`]) if (existsSync(f)) chmodSync(f, 0o600);
}

export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  readonly capabilities = { crossInstanceWakeups: false };
  readonly consumers: ConsumerPositions;
  /** Sender policies (src/sender-policy/), beside the Store port rather than in it. */
  readonly senderPolicies: SenderPolicyStore;
  readonly subscriptions: SubscriptionStore;
  readonly path: string;
  private readonly minFreeBytes: number;
  private readonly db: Database.Database;
  private readonly appends: GroupCommit<AppendInput, ApprovalStepResult>;
  /** Kept only with RA_DEBUG_GROUP_COMMIT: timing every commit and sync is not free on the hot path. */
  private readonly appendStats: GroupCommitStats | undefined;
  private closed = false;
  /** Descriptors of the WAL file, one per fdatasync in flight; empty for :memory: (nothing to sync). */
  private readonly walFds: number[];
  /** Checkpoints the WAL after its fdatasyncs (see checkpointer.ts); undefined for :memory:. */
  readonly checkpointer: Checkpointer | undefined;
  private readonly totals: SqliteQueueTotals;
  /** Each address's last sequence, events and bytes (sqlite-queue-counters.ts). */
  private readonly counters: SqliteQueueCounters;
  /** Which committed events are durable, hence visible to readers (event-visibility.ts). */
  private readonly visibility = new EventVisibility();
  /** Address rows and pages of events (sqlite-read-cache.ts). */
  private readonly cache: SqliteReadCache;
  /** Prepared filtered scans by their SQL (one per filter shape), oldest first. */
  private readonly scanStatements = new Map<string, Database.Statement<unknown[], ScanRow>>();

  private readonly q: ReturnType<SqliteStore['prepare']>;
  private readonly claims: SqliteClaims;
  /** An append that must first prune acknowledged events, in a savepoint: a prune that frees too little rolls back. */
  private readonly appendAfterPrune: (e: NewEvent, c: BatchCounters, size: number, needEvents: number, needBytes: number) => AppendResult;

  constructor(path: string, opts: SqliteStoreOptions = {}) {
    this.path = path;
    this.minFreeBytes = opts.minFreeBytes ?? 32 * 1024 * 1024;
    if (path !== ':memory:') keepPrivate(path);
    this.db = new Database(path);
    // Space freed by deletions (retention, expiry) can be given back to the file system a few pages
    // at a time (reclaimSpace), without a full VACUUM's long exclusive lock. auto_vacuum only takes
    // effect on a database that has no table yet: a file created before this stays as it was
    // (its free pages are reused by new rows; a one-time VACUUM, service stopped, converts it).
    this.db.pragma('auto_vacuum = INCREMENTAL');
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.pragma('foreign_keys = ON');
    this.db.pragma('busy_timeout = 5000');
    try {
      migrateSqlite(this.db, opts.log ?? SILENT_LOG);
    } catch (err) {
      this.db.close(); // a refused or failed migration leaves no handle on the file
      throw err;
    }
    this.q = this.prepare();
    this.counters = new SqliteQueueCounters(this.db, STORED_BYTES_SQL);
    // Another process's commit (an operator's delete): our counters are written, then loaded afresh.
    this.cache = new SqliteReadCache(
      this.db,
      () => this.closed,
      () => this.counters.reload(),
    );
    this.totals = new SqliteQueueTotals(this.db);
    this.claims = new SqliteClaims(this.db, (addressId) => this.visibility.visibleBelow(addressId), {
      indexed: (addressId) => this.counters.load(addressId)?.claimsIndexed ?? null,
      markIndexed: (addressId) => this.counters.markClaimsIndexed(addressId),
    });
    this.consumers = new SqliteConsumerPositions(this.db, () => this.durable());
    this.senderPolicies = new SqliteSenderPolicies(this.db, () => this.durable());
    this.subscriptions = new SqliteSubscriptions(this.db, () => this.durable());
    // Room for both limits: the shortest run of oldest acknowledged events that frees enough
    // events and bytes, or QueueFull (the savepoint undoes nothing, since nothing was written).
    this.appendAfterPrune = this.db.transaction((e: NewEvent, c: BatchCounters, size: number, needEvents: number, needBytes: number) => {
      let pruned = 0;
      let prunedBytes = 0;
      let upto = -1;
      for (const row of this.q.ackedSizes.iterate(e.addressId)) {
        pruned++;
        prunedBytes += row.bytes;
        upto = row.sequence;
        if (pruned >= needEvents && prunedBytes >= needBytes) break;
      }
      if (pruned < needEvents || prunedBytes < needBytes) throw new QueueFull();
      this.q.pruneAckedUpTo.run(e.addressId, upto);
      c.pruned = true;
      return this.insertNext(e, c, size, pruned, prunedBytes);
    });
    // The WAL exists while this connection is open and keeps its inode (it is restarted in place
    // after checkpoints, only deleted when the last connection closes), so these descriptors serve.
    const wal = `${path}-wal`;
    this.walFds = path !== ':memory:' && existsSync(wal) ? Array.from({ length: WAL_SYNCS_IN_FLIGHT }, () => openSync(wal, 'r+')) : [];
    this.counters.start();
    this.appendStats = opts.logGroupCommitStats ? new GroupCommitStats() : undefined;
    const observer = this.appendStats;
    if (this.walFds.length === 0) {
      // Nothing to fdatasync separately: every commit stays synchronous=FULL.
      this.appends = new GroupCommit((inputs) => this.commitAppends(inputs), { observer });
      this.checkpointer = undefined;
    } else {
      this.db.pragma('synchronous = NORMAL');
      // The checkpointer keeps the WAL short; this connection checkpoints by itself (with its own
      // fsyncs, on the event loop) only if the WAL grows far past that, as a backstop.
      this.db.pragma('wal_autocheckpoint = 100000');
      const checkpointer = new Checkpointer(path, opts.checkpoint);
      this.checkpointer = checkpointer;
      const totalChanges = this.db.prepare<[], number>('SELECT total_changes()').pluck();
      const idleFds = [...this.walFds];
      const syncWal: SyncFile = opts.syncWal ?? ((fd, done) => fdatasync(fd, (err) => done(err)));
      this.appends = new GroupCommit((inputs) => this.commitAppends(inputs), {
        observer,
        durability: {
          maxSyncsInFlight: this.walFds.length,
          sync: (done) => {
            // The group commit never has more syncs in flight than there are descriptors.
            const fd = idleFds.pop() as number;
            // Every committed write changes rows, so an unchanged count means the WAL holds nothing
            // committed after this fdatasync began: all of it is on disk when it returns.
            const changesBefore = totalChanges.get();
            syncWal(fd, (err) => {
              idleFds.push(fd);
              if (err) return done(err);
              checkpointer.afterWalSync(totalChanges.get() === changesBefore, done);
            });
          },
          onDurable: (_inputs, outcomes) => this.markDurable(outcomes),
          quiet: () => checkpointer.wantsQuietSync(),
        },
      });
    }
    // Debugging aid (RA_DEBUG_GROUP_COMMIT=1): the group commit's counters every second while it
    // works (how many batches, how large, how long commits and syncs take).
    if (this.appendStats) {
      const log = opts.log ?? SILENT_LOG;
      let last = '';
      setInterval(() => {
        const stats = { groupCommit: this.appendStats, checkpointer: this.checkpointer?.stats };
        const line = JSON.stringify(stats);
        if (line !== last) log.info(stats, 'group commit counters');
        last = line;
      }, 1000).unref();
    }
  }

  /** Migrations run in the constructor (sqlite-migrations.ts; statements are prepared against the final schema). */
  async migrate(): Promise<void> {}

  private prepare() {
    const db = this.db;
    return {
      getAddress: db.prepare<[string], AddressRow>(`SELECT ${ADDRESS_COLUMNS} FROM addresses WHERE id = ?`),
      getAddressBySlug: db.prepare<[string], AddressRow>(`SELECT ${ADDRESS_COLUMNS} FROM addresses WHERE slug = ?`),
      addressExists: db.prepare<[string], { one: number }>('SELECT 1 AS one FROM addresses WHERE id = ?'),
      insertAddress: db.prepare(
        `INSERT INTO addresses (${ADDRESS_COLUMNS}, created_ip)
         VALUES (@id, @slug, @name, @taskId, @readTokenHash, @inboxSecretHash, @signingKeys, @createdAt, @expiresAt, @createdIp)`,
      ),
      // Retention: the oldest acknowledged events first, by the partial index on acknowledged_at (migration 0010).
      acknowledgedDue: db.prepare<[number, number], { rowid: number; address_id: string }>(
        'SELECT rowid, address_id FROM events WHERE acknowledged_at IS NOT NULL AND acknowledged_at < ? ORDER BY acknowledged_at LIMIT ?',
      ),
      deleteEventRow: db.prepare<[number], { address_id: string; bytes: number }>(
        `DELETE FROM events WHERE rowid = ? RETURNING address_id, ${STORED_BYTES_SQL} AS bytes`,
      ),
      freePages: db.prepare<[], number>('PRAGMA freelist_count').pluck(),
      deleteAddress: db.prepare<[string]>('DELETE FROM addresses WHERE id = ?'),
      signingSecrets: db.prepare<[string], { signing_secrets: Buffer | null }>('SELECT signing_secrets FROM addresses WHERE id = ?'),
      setSigningSecrets: db.prepare<[Buffer | null, string]>('UPDATE addresses SET signing_secrets = ? WHERE id = ?'),
      expiredIds: db.prepare<[number, number], { id: string }>('SELECT id FROM addresses WHERE expires_at < ? ORDER BY expires_at LIMIT ?'),
      rateWindow: db.prepare<[string], { window_start: number; count: number }>('SELECT window_start, count FROM rate_windows WHERE key = ?'),
      upsertRateWindow: db.prepare<[string, number, number]>(
        `INSERT INTO rate_windows (key, window_start, count) VALUES (?, ?, ?)
         ON CONFLICT (key) DO UPDATE SET window_start = excluded.window_start, count = excluded.count`,
      ),
      pruneRateWindows: db.prepare<[number]>('DELETE FROM rate_windows WHERE window_start < ?'),
      eventByKey: db.prepare<[string, string], EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE address_id = ? AND dedupe_key = ?`),
      ackedSizes: db.prepare<[string], { sequence: number; bytes: number }>(ACKED_SIZES_SQL),
      pruneAckedUpTo: db.prepare<[string, number]>('DELETE FROM events WHERE address_id = ? AND acknowledged_at IS NOT NULL AND sequence <= ?'),
      // Positional parameters: binding by name from an object costs more per event (bench/README.md).
      insertEvent: db.prepare<[string, string, number, string, string, string, string | null, string | null, string, number, number | null, number | null]>(
        `INSERT INTO events (${INSERTED_EVENT_COLUMNS}, claim_indexed, quarantined_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)`,
      ),
      setBlobBytes: db.prepare<[number, string, number]>('UPDATE events SET blob_bytes = ? WHERE address_id = ? AND sequence = ?'),
      insertBlob: db.prepare<[string, number, string, string, string, number, Uint8Array]>(
        'INSERT INTO event_blobs (address_id, sequence, name, content_type, sha256, size, bytes) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      blob: db.prepare<[string, string, string, string], { sequence: number; content_type: string; sha256: string; size: number }>(
        `SELECT b.sequence, b.content_type, b.sha256, b.size FROM events e
         JOIN event_blobs b ON b.address_id = e.address_id AND b.sequence = e.sequence
         WHERE ${EVENT_ID_TIME_SQL.replace('id', 'e.id')} = substr(?, 10, 9) AND e.id = ? AND e.address_id = ? AND b.name = ?`,
      ),
      blobChunk: db.prepare<[number, number, string, number, string], { chunk: Buffer }>(
        'SELECT substr(bytes, ?, ?) AS chunk FROM event_blobs WHERE address_id = ? AND sequence = ? AND name = ?',
      ),
      page: db.prepare<[string, number, number, number, number], EventRow & { fetched: number }>(
        boundedPageSql(jsonBytesSql('sqlite'), {
          address: '?',
          after: '?',
          below: '?',
          limit: '?',
          budget: '?',
        }),
      ),
      // The event id is bound twice: its time part leads the index on ids (EVENT_ID_TIME_SQL).
      insertApproval: db.prepare(
        `INSERT INTO approvals (${APPROVAL_COLUMNS}) VALUES (${APPROVAL_COLUMNS.split(',')
          .map(() => '?')
          .join(', ')})`,
      ),
      approval: db.prepare<[string], ApprovalRow>(`SELECT ${APPROVAL_COLUMNS} FROM approvals WHERE id = ?`),
      approvalAnswers: db.prepare<[string], ApprovalAnswerRow>('SELECT n, event_id, answer FROM approval_answers WHERE approval_id = ? ORDER BY n'),
      dueApprovals: db.prepare<[number, number], ApprovalRow>(
        `SELECT ${APPROVAL_COLUMNS} FROM approvals WHERE status = 'pending' AND expires_at <= ? ORDER BY expires_at LIMIT ?`,
      ),
      closeApproval: db.prepare<[string, number | null, number, string]>('UPDATE approvals SET status = ?, closed_at = ?, responses = ? WHERE id = ?'),
      insertAnswer: db.prepare<[string, number, string, string]>('INSERT INTO approval_answers (approval_id, n, event_id, answer) VALUES (?, ?, ?, ?)'),
      ack: db.prepare<[number, string, string, string], EventRow>(
        `UPDATE events SET acknowledged_at = COALESCE(acknowledged_at, ?)
         WHERE ${EVENT_ID_TIME_SQL} = substr(?, 10, 9) AND id = ? AND address_id = ? RETURNING ${EVENT_COLUMNS}`,
      ),
      release: db.prepare<[number, string, string, string], EventRow>(releaseSql('sqlite')),
    };
  }

  async ping(): Promise<void> {
    if (this.appends.failure) throw this.appends.failure;
    this.db.prepare('SELECT 1').get();
    // A full disk still answers SELECT 1: readiness also asks for room to write (design.md, "Bounded work").
    if (this.path !== ':memory:') {
      const fs = statfsSync(dirname(this.path));
      const free = fs.bavail * fs.bsize;
      if (free < this.minFreeBytes) {
        throw Object.assign(new Error(`the disk holding the database has ${free} bytes free, below the ${this.minFreeBytes} a write may need`), {
          name: 'StoreNotWritable',
        });
      }
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Commit what is pending, then wait until every commit is durable and answered: no caller may
    // be left without an answer, nor answered before its write is on disk.
    this.appends.drain();
    await this.appends.barrier().catch(() => {});
    // With two syncs in flight, one that began before the barrier may still run (or a failed
    // store may have one running): its descriptor and its checkpoint must outlive it.
    await this.appends.whenNoSyncInFlight();
    // Every address's counters reach its row before the last checkpoint.
    this.counters.close();
    // Its connections close first, so this one is the last and checkpoints and removes the WAL.
    this.checkpointer?.close();
    this.db.close();
    for (const fd of this.walFds) closeSync(fd);
  }

  /** Resolves once every write committed so far is on disk (a no-op when commits are synchronous=FULL). */
  private durable(): Promise<void> {
    return this.appends.barrier();
  }

  async createAddress(a: AddressRecord, rate: { key: string; limit: number; windowMs: number; now: number }): Promise<RateDecision> {
    const decision = this.db
      .transaction((): RateDecision => {
        const w = this.q.rateWindow.get(rate.key);
        const attempt = countAttempt(w && { windowStart: w.window_start, count: w.count }, rate);
        if (!attempt.allowed) return attempt;
        this.q.upsertRateWindow.run(rate.key, attempt.row.windowStart, attempt.row.count);
        this.q.insertAddress.run({ ...a, createdIp: a.createdIp ?? null });
        return { allowed: true };
      })
      .immediate();
    if (decision.allowed) await this.durable();
    return decision;
  }

  async getAddress(id: string): Promise<AddressRecord | null> {
    this.cache.checkExternalChanges();
    const held = this.cache.address(id);
    if (held) return held;
    const r = this.q.getAddress.get(id);
    if (!r) return null;
    const a = Object.freeze(toAddress(r));
    this.cache.rememberAddress(id, a);
    return a;
  }

  /** A cached address is exact: dropped on delete and sweep, and on any other process's commit (SqliteReadCache.checkExternalChanges). */
  heldAddress(id: string): AddressRecord | undefined {
    this.cache.checkExternalChanges();
    return this.cache.address(id);
  }

  /** Another process's commit drops every cache and calls onChange (sqlite-read-cache.ts). */
  watchExternalChanges(onChange: () => void): void {
    this.cache.watchExternalChanges(onChange);
  }

  async countRate(rate: { key: string; limit: number; windowMs: number; now: number }): Promise<RateDecision> {
    // Not awaited to disk: a rate window lost to a power cut only lets a few more deliveries in.
    return this.db
      .transaction((): RateDecision => {
        const w = this.q.rateWindow.get(rate.key);
        const attempt = countAttempt(w && { windowStart: w.window_start, count: w.count }, rate);
        if (!attempt.allowed) return attempt;
        this.q.upsertRateWindow.run(rate.key, attempt.row.windowStart, attempt.row.count);
        return { allowed: true };
      })
      .immediate();
  }

  async deleteAcknowledgedBefore(cutoff: number, batchSize: number): Promise<number> {
    const perAddress = this.db
      .transaction(() => {
        // A deletion writes the address's counters in its own transaction (sqlite-queue-counters.ts),
        // from counters loaded before it: loading them after would recount the address's events
        // above its row without the ones just deleted, and subtract those twice.
        const due = this.q.acknowledgedDue.all(cutoff, batchSize);
        const before = new Map<string, QueueCounters | null>();
        for (const { address_id } of due) if (!before.has(address_id)) before.set(address_id, this.counters.load(address_id));
        const per = new Map<string, { n: number; bytes: number }>();
        for (const { rowid } of due) {
          const row = this.q.deleteEventRow.get(rowid);
          if (!row) continue;
          const p = per.get(row.address_id);
          if (p) {
            p.n++;
            p.bytes += row.bytes;
          } else per.set(row.address_id, { n: 1, bytes: row.bytes });
        }
        const after = new Map<string, QueueCounters>();
        for (const [id, p] of per) {
          const c = before.get(id);
          if (!c) continue;
          c.eventCount -= p.n;
          c.eventBytes -= p.bytes;
          this.counters.persist(id, c);
          after.set(id, c);
        }
        return { per, after };
      })
      .immediate();
    let deleted = 0;
    for (const [id, c] of perAddress.after) this.counters.persisted(id, c);
    for (const [id, p] of perAddress.per) {
      this.forget(id);
      deleted += p.n;
    }
    if (deleted > 0) await this.durable();
    return deleted;
  }

  /**
   * Gives free pages back to the file system in steps of VACUUM_STEP_PAGES, pausing after each step
   * as long as it took (incremental vacuum: each step is one short write transaction on the event
   * loop, where a full VACUUM would lock the database for as long as it copies it, and need as much
   * free disk again). A no-op on a file made before auto_vacuum was set.
   */
  async reclaimSpace(): Promise<void> {
    if (this.path === ':memory:') return;
    for (let free = this.q.freePages.get() as number; free > 0 && !this.closed; free = this.q.freePages.get() as number) {
      const before = free;
      const started = performance.now();
      this.db.pragma(`incremental_vacuum(${VACUUM_STEP_PAGES})`);
      const took = performance.now() - started;
      await this.durable();
      if ((this.q.freePages.get() as number) >= before) return; // auto_vacuum is off on this file
      await new Promise<void>((resolve) => setTimeout(resolve, Math.max(1, took)));
    }
  }

  /** For /metrics (sqlite-queue-totals.ts). */
  async queueTotals(countCap: number): Promise<QueueTotals> {
    // The totals sum the addresses' rows, which may lag the counters held in memory by a flush.
    this.counters.flush();
    return this.totals.read(countCap);
  }

  /** The address's rows changed (or it is gone): forget what is cached about it. */
  private forget(addressId: string, deleted = false): void {
    this.cache.forget(addressId, deleted);
    if (deleted) this.counters.forget(addressId);
  }

  async getAddressBySlug(slug: string): Promise<AddressRecord | null> {
    const r = this.q.getAddressBySlug.get(slug);
    return r ? toAddress(r) : null;
  }

  async getSigningSecrets(addressId: string): Promise<Buffer | null | undefined> {
    const r = this.q.signingSecrets.get(addressId);
    return r === undefined ? undefined : r.signing_secrets;
  }

  async setSigningSecrets(addressId: string, sealed: Buffer | null): Promise<boolean> {
    const changed = this.q.setSigningSecrets.run(sealed, addressId).changes > 0;
    await this.durable();
    return changed;
  }

  async deleteAddress(id: string): Promise<boolean> {
    const deleted = this.q.deleteAddress.run(id).changes > 0;
    this.forget(id, true);
    await this.durable();
    return deleted;
  }

  async deleteExpired(cutoff: number, batchSize: number): Promise<string[]> {
    const ids = this.db
      .transaction(() => {
        const ids = this.q.expiredIds.all(cutoff, batchSize).map((r) => r.id);
        for (const id of ids) this.q.deleteAddress.run(id);
        // Rate windows older than a day cannot matter to any configured window that still runs.
        this.q.pruneRateWindows.run(staleRateWindowsBefore(cutoff));
        return ids;
      })
      .immediate();
    for (const id of ids) this.forget(id, true);
    await this.durable();
    return ids;
  }

  appendEvent(event: NewEvent, limits: StoreLimits): Promise<AppendResult> {
    if (this.closed) return Promise.reject(new StoreClosedError());
    return this.appends.submit({ event, limits }) as Promise<AppendResult>;
  }

  async createApproval(a: ApprovalRecord): Promise<boolean> {
    if (!this.q.addressExists.get(a.addressId)) return false;
    this.q.insertApproval.run(...approvalValues(a));
    await this.durable();
    return true;
  }

  async getApproval(approvalId: string): Promise<{ approval: ApprovalRecord; answers: ApprovalAnswerRecord[] } | null> {
    const r = this.q.approval.get(approvalId);
    return r ? { approval: toApproval(r), answers: this.q.approvalAnswers.all(approvalId).map(toAnswer) } : null;
  }

  async dueApprovals(now: number, limit: number): Promise<ApprovalRecord[]> {
    return this.q.dueApprovals.all(now, limit).map(toApproval);
  }

  /** Through the group commit like any append: in a batch's transaction, answered once durable. */
  approvalStep(step: ApprovalStep, limits: StoreLimits): Promise<ApprovalStepResult> {
    if (this.closed) return Promise.reject(new StoreClosedError());
    return this.appends.submit({ event: step.event, limits, approval: step });
  }

  /**
   * An approval's step inside a batch (the same rules as PostgreSQL's ra_approval_step): this
   * process is the only writer and the batch runs alone, so reading the row and changing it in the
   * same transaction decides every race. The approval changes only if the event was created.
   * Unlike the event, the approval's row is readable as soon as the batch commits, a moment before
   * it is durable: a page may say "answered" while the answerer's 200 still waits for the fsync.
   */
  private approvalItem(step: ApprovalStep, limits: StoreLimits, counters: Map<string, BatchCounters | null>): ApprovalStepResult {
    const e = step.event;
    const row = this.q.approval.get(step.approvalId);
    const a = row !== undefined && row.address_id === e.addressId ? toApproval(row) : undefined;
    const now = e.createdAt;
    if (
      a?.status !== 'pending' ||
      (step.kind === 'respond' && (a.expiresAt <= now || a.responses >= a.maxResponses)) ||
      (step.kind === 'cancel' && a.expiresAt <= now) ||
      (step.kind === 'expire' && a.expiresAt > now)
    )
      return { kind: 'refused' };
    if (step.kind === 'expire' && a.responses > 0) {
      this.q.closeApproval.run('decided', a.expiresAt, a.responses, a.id);
      return { kind: 'closed' };
    }
    const result = this.appendItem({ event: { ...e, dedupeKey: stepDedupeKey(step.kind, a.id, a.responses) }, limits }, counters);
    if (result.kind !== 'created') return result;
    if (step.kind === 'respond') {
      const n = a.responses + 1;
      const full = n >= a.maxResponses;
      this.q.closeApproval.run(full ? 'decided' : 'pending', full ? now : null, n, a.id);
      this.q.insertAnswer.run(a.id, n, e.id, e.data);
    } else {
      this.q.closeApproval.run(step.kind === 'cancel' ? 'cancelled' : 'expired', now, a.responses, a.id);
    }
    return result;
  }

  /**
   * One transaction for the whole batch. Items are isolated without a savepoint each: an item
   * writes with one statement, which SQLite rolls back alone if it fails; only an item that must
   * prune first takes a savepoint (a savepoint per item was a fifth of an append's cost:
   * (bench/README.md, "Measurements behind small choices")).
   */
  private commitAppends(inputs: readonly AppendInput[]): ItemOutcome<ApprovalStepResult>[] {
    const outcomes = this.db
      .transaction(() => {
        // Under the write lock: an operator's delete committed since this turn's check is seen here,
        // before any counter held for an address it removed is used.
        this.cache.checkExternalChangesNow();
        // The rows of counters changed a flush interval ago, as they stand before this batch (the
        // batch's own prunes write theirs after, with the batch's values).
        const written = this.counters.writeDue();
        const counters = new Map<string, BatchCounters | null>();
        const result = inputs.map((input): ItemOutcome<ApprovalStepResult> => {
          try {
            return { ok: true, value: input.approval ? this.approvalItem(input.approval, input.limits, counters) : this.appendItem(input, counters) };
          } catch (error) {
            if (error instanceof QueueFull) return { ok: true, value: { kind: 'queue_full' } };
            // Some errors (a full disk, an I/O error) make SQLite roll the whole transaction back:
            // the items after this one would run outside it, so the batch fails as a whole.
            if (!this.db.inTransaction) throw error;
            return { ok: false, error };
          }
        });
        for (const [addressId, c] of counters) if (c?.pruned) this.counters.persist(addressId, c);
        return { result, counters, written };
      })
      .immediate();
    this.counters.written(outcomes.written);
    for (const [addressId, c] of outcomes.counters) {
      if (!c?.changed) continue;
      const kept = { lastSequence: c.lastSequence, eventCount: c.eventCount, eventBytes: c.eventBytes, claimsIndexed: c.claimsIndexed };
      if (c.pruned) this.counters.persisted(addressId, kept);
      else this.counters.commit(addressId, kept);
    }
    return this.afterCommit(outcomes.result);
  }

  private afterCommit(outcomes: ItemOutcome<ApprovalStepResult>[]): ItemOutcome<ApprovalStepResult>[] {
    // Committed but not durable yet: hidden from readers until markDurable. This runs in the same
    // synchronous turn as the commit, so no read can come in between.
    for (const [addressId, first] of firstCreated(outcomes)) {
      this.forget(addressId);
      if (this.walFds.length === 0) continue;
      this.visibility.hide(addressId, first);
    }
    return outcomes;
  }

  /** A batch is on disk: its events become visible (batches become durable in commit order). */
  private markDurable(outcomes: readonly ItemOutcome<ApprovalStepResult>[]): void {
    for (const [addressId] of firstCreated(outcomes)) {
      this.forget(addressId);
      this.visibility.reveal(addressId);
    }
  }

  /**
   * The counters change only after the event's row is written (insertNext's last lines), so an
   * item that fails leaves them as they were: the next item takes the same sequence, and sequences
   * stay gapless.
   */
  private appendItem(input: AppendInput, counters: Map<string, BatchCounters | null>): AppendResult {
    const { event: e, limits } = input;
    let c = counters.get(e.addressId);
    if (c === undefined) {
      const held = this.counters.load(e.addressId);
      c = held ? { ...held, changed: false, pruned: false } : null;
      counters.set(e.addressId, c);
    }
    if (!c) return { kind: 'address_gone' };
    if (e.dedupeKey !== null) {
      const existing = this.q.eventByKey.get(e.addressId, e.dedupeKey);
      if (existing) return { kind: 'duplicate', event: toEvent(existing) };
    }
    const size = storedBytes(e.data, e.metadata, blobBytes(e.blobs));
    const room = roomToFree(c, size, limits);
    if (room !== null) return this.appendAfterPrune(e, c, size, room.events, room.bytes);
    return this.insertNext(e, c, size, 0, 0);
  }

  private insertNext(e: NewEvent, c: BatchCounters, size: number, pruned: number, prunedBytes: number): AppendResult {
    const sequence = c.lastSequence + 1;
    this.q.insertEvent.run(
      e.id,
      e.addressId,
      sequence,
      e.type,
      e.source,
      e.data,
      e.metadata,
      e.dedupeKey,
      e.trust,
      e.createdAt,
      c.claimsIndexed ? 1 : null,
      e.quarantinedAt ?? null,
    );
    if (e.blobs !== undefined && e.blobs.length > 0) {
      // Same transaction as the event: durable with it, in the same fdatasync of the WAL.
      this.q.setBlobBytes.run(blobBytes(e.blobs), e.addressId, sequence);
      for (const b of e.blobs) this.q.insertBlob.run(e.addressId, sequence, b.name, b.contentType, b.sha256, b.bytes.byteLength, b.bytes);
    }
    c.lastSequence = sequence;
    c.eventCount += 1 - pruned;
    c.eventBytes += size - prunedBytes;
    c.changed = true;
    const { blobs: _stored, ...record } = e;
    return { kind: 'created', event: { ...record, sequence, acknowledgedAt: null } };
  }

  async listEvents(addressId: string, after: number, limit: number, maxBytes: number): Promise<EventPageRecord | null> {
    this.cache.checkExternalChanges();
    const key = `${after}:${limit}:${maxBytes}`;
    const cached = this.cache.page(addressId, key);
    if (cached) return cached;
    const page = this.db.transaction((): EventPageRecord | null => {
      if (!this.q.addressExists.get(addressId)) return null;
      const visibleBelow = this.visibility.visibleBelow(addressId);
      const { rows, hasMore } = cutPage(this.q.page.all(addressId, after, visibleBelow, limit + 1, maxBytes), limit);
      return Object.freeze({ events: Object.freeze(rows.map((r) => Object.freeze(toEvent(r)))) as EventRecord[], hasMore });
    })();
    if (!page) return null;
    this.cache.rememberPage(addressId, key, page);
    return page;
  }

  /**
   * A filtered read (event-filter-sql.ts), not cached: statements are prepared per filter shape and
   * kept in a small map, since a consumer polling with one filter asks the same shape again.
   */
  async scanEvents(addressId: string, after: number, filter: EventFilter, limit: number, maxBytes: number): Promise<ScanPageRecord | null> {
    const p = new SqlParams('sqlite');
    const visibleBelow = this.visibility.visibleBelow(addressId);
    const sql = scanSql({
      address: p.add(addressId),
      after: p.add(after),
      below: p.add(visibleBelow),
      scanEvents: SCAN_EVENTS,
      scanBytes: SCAN_BYTES,
      limit: p.add(limit + 1),
      budget: p.add(maxBytes),
      bytes: jsonBytesSql('sqlite'),
      filter: filterSql(filter, p),
      dataJson: null,
    });
    let stmt = this.scanStatements.get(sql);
    if (stmt === undefined) {
      if (this.scanStatements.size >= SCAN_STATEMENTS) this.scanStatements.delete(this.scanStatements.keys().next().value as string);
      stmt = this.db.prepare<unknown[], ScanRow>(sql);
      this.scanStatements.set(sql, stmt);
    }
    return scanPage(stmt.all(...p.bound()), after, limit);
  }

  async openBlob(addressId: string, eventId: string, name: BlobName): Promise<StoredBlob | null> {
    const b = this.q.blob.get(eventId, eventId, addressId, name);
    // An event not yet durable is not visible (event-visibility.ts), nor are its bytes.
    if (!b || b.sequence >= this.visibility.visibleBelow(addressId)) return null;
    const q = this.q;
    return {
      contentType: b.content_type,
      size: b.size,
      sha256: b.sha256,
      async *chunks() {
        // One chunk per turn of the event loop, each a bounded read: a download never holds the blob whole.
        for (let offset = 0; offset < b.size; offset += BLOB_CHUNK_BYTES) {
          const row = q.blobChunk.get(offset + 1, BLOB_CHUNK_BYTES, addressId, b.sequence, name);
          if (!row) throw new Error('the blob was deleted while it was being read');
          yield row.chunk;
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
      },
    };
  }

  async ackEvent(addressId: string, eventId: string, now: number): Promise<EventRecord | null> {
    const r = this.q.ack.get(now, eventId, eventId, addressId);
    if (!r) return null;
    this.forget(addressId);
    await this.durable();
    return toEvent(r);
  }

  async releaseEvent(addressId: string, eventId: string, now: number): Promise<EventRecord | null> {
    const r = this.q.release.get(now, eventId, eventId, addressId);
    if (!r) return null;
    this.forget(addressId);
    await this.durable();
    return toEvent(r);
  }

  /** A claim (sqlite-claims.ts), answered once on disk; it changes rows that cached pages show. */
  async claimEvents(addressId: string, r: ClaimRequest): Promise<ClaimBatch | null> {
    if (this.closed) throw new StoreClosedError();
    const batch = this.claims.claim(addressId, r);
    if (batch && (batch.claims.length > 0 || batch.died > 0)) {
      this.forget(addressId);
      await this.durable();
    }
    return batch;
  }

  async settleClaim(addressId: string, eventId: string, leaseId: string, s: Settlement, now: number): Promise<SettleResult> {
    if (this.closed) throw new StoreClosedError();
    const result = this.claims.settle(addressId, eventId, leaseId, s, now);
    if (result.outcome === 'settled') this.forget(addressId);
    await this.durable();
    return result;
  }
}

/** The first sequence each address received in a batch's outcomes (sequences ascend within a batch). */
function firstCreated(outcomes: readonly ItemOutcome<ApprovalStepResult>[]): Map<string, number> {
  const first = new Map<string, number>();
  for (const o of outcomes) {
    if (o.ok && o.value.kind === 'created' && !first.has(o.value.event.addressId)) first.set(o.value.event.addressId, o.value.event.sequence);
  }
  return first;
}
