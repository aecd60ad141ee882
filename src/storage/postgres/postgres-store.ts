// PostgreSQL store (pg): several instances on one database behave as one service. This class holds
// the pools and the LISTEN connection and hands them, through their constructors, to the
// collaborators that do each job: postgres-appends.ts (appends, the group commit, dedupe),
// postgres-addresses.ts, postgres-approvals.ts, postgres-reads.ts, postgres-claims.ts,
// postgres-consumers.ts and postgres-sender-policies.ts.
// Wake-ups: NOTIFY ra_address_changed with the address id, inside the writing transaction, so no
// instance wakes before the commit; each instance LISTENs on one dedicated connection
// (change-listener.ts). Deletions notify too, so waits on other instances end with 404.
// Durability: a call resolves only after COMMIT returned (synchronous_commit as configured on
// the server; the default, on, makes a 2xx survive kill -9 of the service and of PostgreSQL).
// Capacity (design.md, "Bounded work"): two pools. The writes pool (PG_POOL_SIZE) runs the short
// statements a delivery, an ack or a lookup needs; the reads pool (PG_READ_POOL_SIZE) runs what can
// take long or come by the thousand (pages, filtered reads, claims and the re-reads of waiting
// claims, blob chunks, totals). However many slow reads are queued, a delivery or an ack to any
// address never waits for their connections; a read that waits too long for one is answered 503
// with Retry-After (pg's connection timeout, or statement_timeout), as a store outage is.
// Times are epoch ms in BIGINT columns; pg returns int8 as strings, parsed here with Number.

import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
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
import { EVENT_COLUMNS, EVENT_ID_TIME_SQL, type EventRow, releaseSql, toEvent } from '../rows.js';
import { ChangeListener, type ListenerState } from './change-listener.js';
import { runMigrations } from './migrator.js';
import { PostgresAddresses } from './postgres-addresses.js';
import { PostgresAppends } from './postgres-appends.js';
import { PostgresApprovals } from './postgres-approvals.js';
import { PostgresClaims } from './postgres-claims.js';
import { PostgresConsumerPositions } from './postgres-consumers.js';
import { PostgresEpoch } from './postgres-epoch.js';
import { PostgresReads } from './postgres-reads.js';
import { PostgresRotation, parseRotated } from './postgres-rotation.js';
import { PostgresSenderPolicies } from './postgres-sender-policies.js';
import { PostgresSubscriptions } from './postgres-subscriptions.js';

const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'migrations');

/**
 * The NOTIFY channel; the payload is the id of the address that changed, or `<id> rotated <identity>`
 * when a rotation replaced the read token named by the identity (postgres-rotation.ts).
 */
export const CHANGE_CHANNEL = 'ra_address_changed';
export const APPLICATION_NAME = 'return-address';
export const LISTENER_APPLICATION_NAME = 'return-address-listener';
export const READS_APPLICATION_NAME = 'return-address-reads';

/** /readyz fails once the listener has been disconnected this long (wake-ups would be late). */
const LISTENER_DOWN_UNREADY_MS = 10_000;

/** Pending approvals an address may hold when the caller names no bound (createApproval). */
const UNBOUNDED: ApprovalLimits = { maxPending: Number.MAX_SAFE_INTEGER, maxBytesPerAddress: Number.MAX_SAFE_INTEGER };

export interface PostgresStoreOptions {
  connectionString: string;
  /** Connections for deliveries, acks and lookups (PG_POOL_SIZE); the reads pool and the LISTEN connection come on top. */
  poolSize: number;
  /** Connections for pages, filtered reads, claims, blob reads and totals (PG_READ_POOL_SIZE); default: poolSize. */
  readPoolSize?: number;
  /** statement_timeout of pooled connections in ms (PG_STATEMENT_TIMEOUT_MS); 0 disables it. */
  statementTimeoutMs: number;
  log?: Log;
}

export class PostgresStore implements Store {
  readonly kind = 'postgres' as const;
  readonly capabilities = { crossInstanceWakeups: true };
  readonly consumers: ConsumerPositions;
  /** Sender policies (src/sender-policy/), beside the Store port rather than in it. */
  readonly senderPolicies: SenderPolicyStore;
  /** Webhook subscriptions (src/push/, postgres-subscriptions.ts). */
  readonly subscriptions: SubscriptionStore;
  /** The store epoch and last sequences (epoch/, postgres-epoch.ts). */
  readonly epochs: EpochStore;
  /** Credential rotation (rotation/, postgres-rotation.ts). */
  readonly credentials: CredentialStore;
  private readonly clientConfig: pg.ClientConfig;
  private readonly pool: pg.Pool;
  /** Reads that can take long or come in crowds: never on `pool`, so they cannot hold a delivery up. */
  private readonly readPool: pg.Pool;
  private readonly claims: PostgresClaims;
  private readonly appends: PostgresAppends;
  private readonly addresses: PostgresAddresses;
  private readonly approvals: PostgresApprovals;
  private readonly reads: PostgresReads;
  private listener: ChangeListener | undefined;
  private readonly log: Log;
  private closing: Promise<void> | undefined;

  constructor(opts: PostgresStoreOptions) {
    this.clientConfig = {
      connectionString: opts.connectionString,
      application_name: APPLICATION_NAME,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      connectionTimeoutMillis: 10_000,
    };
    const pooled = {
      ...this.clientConfig,
      statement_timeout: opts.statementTimeoutMs > 0 ? opts.statementTimeoutMs : false,
      // A transaction left open by a stuck caller would hold its address lock: end it.
      idle_in_transaction_session_timeout: 60_000,
    } as const;
    this.pool = new pg.Pool({ ...pooled, max: opts.poolSize });
    this.readPool = new pg.Pool({ ...pooled, max: opts.readPoolSize ?? opts.poolSize, application_name: READS_APPLICATION_NAME });
    this.consumers = new PostgresConsumerPositions(this.pool);
    this.senderPolicies = new PostgresSenderPolicies(this.pool);
    this.subscriptions = new PostgresSubscriptions(this.pool);
    this.credentials = new PostgresRotation(this.pool, CHANGE_CHANNEL);
    this.epochs = new PostgresEpoch(this.readPool);
    this.claims = new PostgresClaims(this.readPool, this.pool, CHANGE_CHANNEL);
    this.appends = new PostgresAppends(this.pool, CHANGE_CHANNEL);
    this.addresses = new PostgresAddresses(this.pool, CHANGE_CHANNEL);
    this.approvals = new PostgresApprovals(this.pool, CHANGE_CHANNEL);
    this.reads = new PostgresReads(this.readPool);
    this.log = opts.log ?? SILENT_LOG;
    let idleConnectionsLost = 0;
    // An idle pooled connection died (server restart, terminated backend): the pool drops it and
    // opens a new one on demand. Without this handler the 'error' event would crash the process;
    // with it, the loss is still seen in the log.
    for (const pool of [this.pool, this.readPool]) {
      pool.on('error', (err) => {
        idleConnectionsLost++;
        this.log.warn({ err, idleConnectionsLost }, 'an idle PostgreSQL connection failed; the pool opens a new one when needed');
      });
    }
  }

  migrate(): Promise<void> {
    return runMigrations(this.clientConfig, MIGRATIONS_DIR, this.log);
  }

  async ping(): Promise<void> {
    // Reachable is not enough: a database in recovery or read-only answers reads and refuses writes.
    const r = await this.pool.query<{ writable: boolean }>("SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off' AS writable");
    if (!r.rows[0]?.writable) throw Object.assign(new Error('the database takes no writes (read-only or in recovery)'), { name: 'StoreNotWritable' });
    // The database is back while the LISTEN connection waits out its backoff: reconnect it now.
    await this.listener?.reconnectNow();
    const down = this.listener?.status().downSince;
    if (down !== undefined && Date.now() - down > LISTENER_DOWN_UNREADY_MS) {
      throw new Error('the LISTEN connection is down; cross-instance wake-ups would be late');
    }
  }

  /** The LISTEN connection's state, for diagnostics and tests; undefined before subscribe(). */
  listenerStatus(): { state: ListenerState; listens: number } | undefined {
    const s = this.listener?.status();
    return s && { state: s.state, listens: s.listens };
  }

  close(): Promise<void> {
    return (this.closing ??= (async () => {
      await this.appends.whenIdle();
      await this.listener?.close();
      await Promise.all([this.pool.end(), this.readPool.end()]);
    })());
  }

  async subscribe(
    onAddressChanged: (addressId: string) => void,
    onResync: () => void,
    onReadTokenRotated?: (addressId: string, identity: string) => void,
  ): Promise<void> {
    if (this.listener) throw new Error('already subscribed');
    this.listener = new ChangeListener({
      clientConfig: { ...this.clientConfig, application_name: LISTENER_APPLICATION_NAME, query_timeout: 5_000 },
      channel: CHANGE_CHANNEL,
      onNotification: (payload) => {
        const rotated = parseRotated(payload);
        if (rotated === undefined) onAddressChanged(payload);
        else onReadTokenRotated?.(rotated.addressId, rotated.identity);
      },
      onListening: onResync,
      log: this.log,
    });
    await this.listener.start();
  }

  createAddress(a: AddressRecord, rate: { key: string; limit: number; windowMs: number; now: number }): Promise<RateDecision> {
    return this.addresses.create(a, rate);
  }

  countRate(rate: { key: string; limit: number; windowMs: number; now: number }): Promise<RateDecision> {
    return this.addresses.countRate(rate);
  }

  getAddress(id: string): Promise<AddressRecord | null> {
    return this.addresses.get(id);
  }

  getAddressBySlug(slug: string): Promise<AddressRecord | null> {
    return this.addresses.bySlug(slug);
  }

  getSigningSecrets(addressId: string): Promise<Buffer | null | undefined> {
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
    if (this.closing) return Promise.reject(new StoreClosedError());
    return this.appends.submit({ event, limits });
  }

  /** One batch of ra_delete_acknowledged (migration 0010), which locks the addresses as appends do. */
  async deleteAcknowledgedBefore(cutoff: number, batchSize: number): Promise<number> {
    const r = await this.pool.query<{ deleted: number }>('SELECT ra_delete_acknowledged($1, $2) AS deleted', [cutoff, batchSize]);
    return r.rows[0]?.deleted ?? 0;
  }

  /**
   * Plain deletes leave dead tuples that autovacuum marks reusable (the table stops growing, new
   * rows fill the holes); giving the file's space back to the OS would take VACUUM FULL, an
   * exclusive lock on the whole table, which a running service must not take.
   */
  async reclaimSpace(): Promise<void> {}

  queueTotals(countCap: number): Promise<{ stored: number; unacknowledged: number; oldestUnacknowledgedAt: number | null }> {
    return this.reads.queueTotals(countCap);
  }

  openBlob(addressId: string, eventId: string, name: BlobName): Promise<StoredBlob | null> {
    return this.reads.openBlob(addressId, eventId, name);
  }

  listEvents(addressId: string, after: number, limit: number, maxBytes: number): Promise<EventPageRecord | null> {
    return this.reads.listEvents(addressId, after, limit, maxBytes);
  }

  scanEvents(addressId: string, after: number, filter: EventFilter, limit: number, maxBytes: number): Promise<ScanPageRecord | null> {
    return this.reads.scanEvents(addressId, after, filter, limit, maxBytes);
  }

  async releaseEvent(addressId: string, eventId: string, now: number): Promise<EventRecord | null> {
    const r = await this.pool.query<EventRow>(releaseSql('postgres'), [now, eventId, addressId]);
    return r.rows[0] ? toEvent(r.rows[0]) : null;
  }

  async ackEvent(addressId: string, eventId: string, now: number): Promise<EventRecord | null> {
    const r = await this.pool.query<EventRow>(
      `UPDATE events SET acknowledged_at = COALESCE(acknowledged_at, $1)
       WHERE ${EVENT_ID_TIME_SQL} = substr($2::text, 10, 9) AND id = $2 AND address_id = $3
       RETURNING ${EVENT_COLUMNS}`,
      [now, eventId, addressId],
    );
    return r.rows[0] ? toEvent(r.rows[0]) : null;
  }

  /** A claim in one statement (postgres-claims.ts). */
  claimEvents(addressId: string, r: ClaimRequest): Promise<ClaimBatch | null> {
    if (this.closing) return Promise.reject(new StoreClosedError());
    return this.claims.claim(addressId, r);
  }

  settleClaim(addressId: string, eventId: string, leaseId: string, s: Settlement, now: number): Promise<SettleResult> {
    if (this.closing) return Promise.reject(new StoreClosedError());
    return this.claims.settle(addressId, eventId, leaseId, s, now);
  }

  /** Without bounds (createApprovalWithin names them); its bytes are counted all the same. */
  async createApproval(a: ApprovalRecord): Promise<boolean> {
    return (await this.createApprovalWithin(a, UNBOUNDED)).kind === 'created';
  }

  createApprovalWithin(a: ApprovalRecord, limits: ApprovalLimits): Promise<CreateApprovalResult> {
    if (this.closing) return Promise.reject(new StoreClosedError());
    return this.approvals.create(a, limits);
  }

  getApproval(approvalId: string): Promise<{ approval: ApprovalRecord; answers: ApprovalAnswerRecord[] } | null> {
    return this.approvals.get(approvalId);
  }

  dueApprovals(now: number, limit: number): Promise<ApprovalRecord[]> {
    return this.approvals.due(now, limit);
  }

  approvalStep(step: ApprovalStep, limits: StoreLimits): Promise<ApprovalStepResult> {
    if (this.closing) return Promise.reject(new StoreClosedError());
    return this.approvals.step(step, limits);
  }
}
