// Embedded store on one SQLite file (better-sqlite3), for a single instance. This class holds the
// connection and hands it, through their constructors, to the collaborators that do each job:
// - sqlite-connection.ts: opening the file (private, WAL, migrations);
// - sqlite-durability.ts: the group commit and its fdatasyncs of the WAL, checkpoints;
// - sqlite-statements.ts: the prepared statements and what the collaborators share (SqliteParts);
// - sqlite-appends.ts: a batch's appends and approval steps, pruning, in one transaction;
// - sqlite-addresses.ts, sqlite-approvals.ts, sqlite-reads.ts, sqlite-retention.ts,
//   sqlite-claims.ts, sqlite-consumers.ts, sqlite-sender-policies.ts: the rest of the port.
//
// Durability: every write (appends, addresses, acks, deletions) waits for an fdatasync of the WAL
// that started after its commit before it is answered (sqlite-durability.ts).
// Counters: each address's counters live in memory and reach the addresses row lazily
// (sqlite-queue-counters.ts): an append commit writes no addresses page.
// Visibility: an appended event stays invisible to readers until its batch is durable, so a
// reader never sees an event that a power cut could take back (and whose sequence could then be
// reused); reads stop below the oldest batch not yet durable (event-visibility.ts), so what a reader
// sees is always a durable prefix.
// Caches: address rows and pages of events, dropped on every change this process makes and, through
// PRAGMA data_version, on any other process's commit (sqlite-read-cache.ts).

import { closeSync, statfsSync } from 'node:fs';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';
import type {
  ApprovalAnswerRecord,
  ApprovalLimits,
  ApprovalRecord,
  ApprovalStep,
  ApprovalStepResult,
  CreateApprovalResult,
} from '../../approvals/approval-model.js';
import type { BlobName, StoredBlob } from '../../blobs/event-blob.js';
import type { ClaimBatch, ClaimRequest, Settlement, SettleResult } from '../../claims/claim-rules.js';
import type { ConsumerPositions } from '../../consumers/consumer-positions.js';
import type { EventFilter } from '../../domain/event-filter.js';
import type { AddressRecord, AppendResult, EventPageRecord, EventRecord, NewEvent, RateDecision, ScanPageRecord } from '../../domain/model.js';
import { type Log, SILENT_LOG, type Store, StoreClosedError, type StoreLimits } from '../../domain/ports.js';
import type { EpochStore } from '../../epoch/epoch-store.js';
import type { SubscriptionStore } from '../../push/subscription-store.js';
import type { CredentialStore } from '../../rotation/rotation-store.js';
import type { SenderPolicyStore } from '../../sender-policy/sender-policy-store.js';
import { toEvent } from '../rows.js';
import type { Checkpointer, CheckpointerOptions, SyncFile } from './checkpointer.js';
import { EventVisibility } from './event-visibility.js';
import type { GroupCommit, GroupCommitStats } from './group-commit.js';
import { SqliteAddresses } from './sqlite-addresses.js';
import { type AppendInput, SqliteAppends } from './sqlite-appends.js';
import { SqliteApprovals } from './sqlite-approvals.js';
import { SqliteClaims } from './sqlite-claims.js';
import { openSqliteDatabase } from './sqlite-connection.js';
import { SqliteConsumerPositions } from './sqlite-consumers.js';
import { wireGroupCommit } from './sqlite-durability.js';
import { SqliteEpoch } from './sqlite-epoch.js';
import { SqliteQueueCounters } from './sqlite-queue-counters.js';
import { type QueueTotals, SqliteQueueTotals } from './sqlite-queue-totals.js';
import { SqliteReadCache } from './sqlite-read-cache.js';
import { SqliteReads } from './sqlite-reads.js';
import { SqliteRetention } from './sqlite-retention.js';
import { SqliteRotation } from './sqlite-rotation.js';
import { SqliteSenderPolicies } from './sqlite-sender-policies.js';
import { prepareStatements, type SqliteParts, type SqliteStatements, STORED_BYTES_SQL } from './sqlite-statements.js';
import { SqliteSubscriptions } from './sqlite-subscriptions.js';

export { ACKED_SIZES_SQL } from './sqlite-statements.js';

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

/** Pending approvals an address may hold when the caller names no bound (createApproval). */
const UNBOUNDED: ApprovalLimits = { maxPending: Number.MAX_SAFE_INTEGER, maxBytesPerAddress: Number.MAX_SAFE_INTEGER };

export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  readonly capabilities = { crossInstanceWakeups: false };
  readonly consumers: ConsumerPositions;
  /** Sender policies (src/sender-policy/), beside the Store port rather than in it. */
  readonly senderPolicies: SenderPolicyStore;
  /** Webhook subscriptions (src/push/, sqlite-subscriptions.ts). */
  readonly subscriptions: SubscriptionStore;
  /** The store epoch and last sequences (epoch/, sqlite-epoch.ts). */
  readonly epochs: EpochStore;
  /** Credential rotation (rotation/, sqlite-rotation.ts). */
  readonly credentials: CredentialStore;
  readonly path: string;
  private readonly minFreeBytes: number;
  private readonly db: Database.Database;
  private readonly q: SqliteStatements;
  private readonly appends: GroupCommit<AppendInput, ApprovalStepResult>;
  /** Kept only with RA_DEBUG_GROUP_COMMIT (timing every commit and sync is not free on the hot path); bench/wal-frames.ts reads it. */
  readonly appendStats: GroupCommitStats | undefined;
  private closed = false;
  /** Descriptors of the WAL file, one per fdatasync in flight; empty for :memory: (nothing to sync). */
  private readonly walFds: number[];
  /** Checkpoints the WAL after its fdatasyncs (see checkpointer.ts); undefined for :memory:. */
  readonly checkpointer: Checkpointer | undefined;
  private readonly totals: SqliteQueueTotals;
  /** Each address's last sequence, events and bytes (sqlite-queue-counters.ts). */
  private readonly counters: SqliteQueueCounters;
  /** Address rows and pages of events (sqlite-read-cache.ts). */
  private readonly cache: SqliteReadCache;
  private readonly claims: SqliteClaims;
  private readonly addresses: SqliteAddresses;
  private readonly approvals: SqliteApprovals;
  private readonly reads: SqliteReads;
  private readonly retention: SqliteRetention;

  constructor(path: string, opts: SqliteStoreOptions = {}) {
    this.path = path;
    this.minFreeBytes = opts.minFreeBytes ?? 32 * 1024 * 1024;
    this.db = openSqliteDatabase(path, opts.log ?? SILENT_LOG);
    this.q = prepareStatements(this.db);
    this.counters = new SqliteQueueCounters(this.db, STORED_BYTES_SQL);
    // Another process's commit (an operator's delete): our counters are written, then loaded afresh.
    this.cache = new SqliteReadCache(
      this.db,
      () => this.closed,
      () => this.counters.reload(),
    );
    const visibility = new EventVisibility();
    const parts: SqliteParts = {
      db: this.db,
      q: this.q,
      counters: this.counters,
      cache: this.cache,
      visibility,
      durable: () => this.durable(),
      forget: (addressId, deleted) => this.forget(addressId, deleted),
      isClosed: () => this.closed,
    };
    this.totals = new SqliteQueueTotals(this.db);
    this.claims = new SqliteClaims(this.db, (addressId) => visibility.visibleBelow(addressId), {
      indexed: (addressId) => this.counters.load(addressId)?.claimsIndexed ?? null,
      markIndexed: (addressId) => this.counters.markClaimsIndexed(addressId),
    });
    this.consumers = new SqliteConsumerPositions(this.db, () => this.durable());
    this.senderPolicies = new SqliteSenderPolicies(this.db, () => this.durable());
    this.subscriptions = new SqliteSubscriptions(this.db, () => this.durable());
    this.epochs = new SqliteEpoch(this.db);
    this.credentials = new SqliteRotation(
      this.db,
      () => this.durable(),
      (id) => this.cache.forget(id, true),
    );
    this.addresses = new SqliteAddresses(parts);
    this.approvals = new SqliteApprovals(parts);
    this.reads = new SqliteReads(parts);
    this.retention = new SqliteRetention(parts, path);
    let batches: SqliteAppends | undefined;
    const wired = wireGroupCommit<AppendInput, ApprovalStepResult>(
      this.db,
      path,
      opts,
      (inputs) => (batches as SqliteAppends).commit(inputs),
      (outcomes) => (batches as SqliteAppends).markDurable(outcomes),
    );
    batches = new SqliteAppends(parts, wired.walFds.length > 0);
    this.appends = wired.appends;
    this.walFds = wired.walFds;
    this.checkpointer = wired.checkpointer;
    this.appendStats = wired.stats;
    this.counters.start();
  }

  /** Migrations run in the constructor (sqlite-migrations.ts; statements are prepared against the final schema). */
  async migrate(): Promise<void> {}

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

  /** The address's rows changed (or it is gone): forget what is cached about it. */
  private forget(addressId: string, deleted = false): void {
    this.cache.forget(addressId, deleted);
    if (deleted) this.counters.forget(addressId);
  }

  createAddress(a: AddressRecord, rate: { key: string; limit: number; windowMs: number; now: number }): Promise<RateDecision> {
    return this.addresses.create(a, rate);
  }

  async getAddress(id: string): Promise<AddressRecord | null> {
    return this.addresses.get(id);
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
    return this.addresses.countRate(rate);
  }

  deleteAcknowledgedBefore(cutoff: number, batchSize: number): Promise<number> {
    return this.retention.deleteAcknowledgedBefore(cutoff, batchSize);
  }

  /** A bounded incremental vacuum (sqlite-retention.ts). */
  reclaimSpace(): Promise<void> {
    return this.retention.reclaimSpace();
  }

  /** For /metrics (sqlite-queue-totals.ts). */
  async queueTotals(countCap: number): Promise<QueueTotals> {
    // The totals sum the addresses' rows, which may lag the counters held in memory by a flush.
    this.counters.flush();
    return this.totals.read(countCap);
  }

  async getAddressBySlug(slug: string): Promise<AddressRecord | null> {
    return this.addresses.bySlug(slug);
  }

  async getSigningSecrets(addressId: string): Promise<Buffer | null | undefined> {
    return this.addresses.signingSecrets(addressId);
  }

  setSigningSecrets(addressId: string, sealed: Buffer | null): Promise<boolean> {
    return this.addresses.setSigningSecrets(addressId, sealed);
  }

  deleteAddress(id: string): Promise<boolean> {
    return this.addresses.delete(id);
  }

  deleteExpired(cutoff: number, batchSize: number): Promise<string[]> {
    return this.addresses.deleteExpired(cutoff, batchSize);
  }

  appendEvent(event: NewEvent, limits: StoreLimits): Promise<AppendResult> {
    if (this.closed) return Promise.reject(new StoreClosedError());
    return this.appends.submit({ event, limits }) as Promise<AppendResult>;
  }

  /** Without bounds (createApprovalWithin names them); its bytes are counted all the same. */
  async createApproval(a: ApprovalRecord): Promise<boolean> {
    return (await this.createApprovalWithin(a, UNBOUNDED)).kind === 'created';
  }

  async createApprovalWithin(a: ApprovalRecord, limits: ApprovalLimits): Promise<CreateApprovalResult> {
    if (this.closed) throw new StoreClosedError();
    return this.approvals.create(a, limits);
  }

  async getApproval(approvalId: string): Promise<{ approval: ApprovalRecord; answers: ApprovalAnswerRecord[] } | null> {
    return this.approvals.get(approvalId);
  }

  async dueApprovals(now: number, limit: number): Promise<ApprovalRecord[]> {
    return this.approvals.due(now, limit);
  }

  /** Through the group commit like any append: in a batch's transaction, answered once durable (sqlite-appends.ts). */
  approvalStep(step: ApprovalStep, limits: StoreLimits): Promise<ApprovalStepResult> {
    if (this.closed) return Promise.reject(new StoreClosedError());
    return this.appends.submit({ event: step.event, limits, approval: step });
  }

  async listEvents(addressId: string, after: number, limit: number, maxBytes: number): Promise<EventPageRecord | null> {
    return this.reads.listEvents(addressId, after, limit, maxBytes);
  }

  async scanEvents(addressId: string, after: number, filter: EventFilter, limit: number, maxBytes: number): Promise<ScanPageRecord | null> {
    return this.reads.scanEvents(addressId, after, filter, limit, maxBytes);
  }

  async openBlob(addressId: string, eventId: string, name: BlobName): Promise<StoredBlob | null> {
    return this.reads.openBlob(addressId, eventId, name);
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
