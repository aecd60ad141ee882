// PostgreSQL store (pg): several instances on one database behave as one service.
//
// Ordering: an append (the ra_append_event function, migration 0002) locks its address row
// (SELECT … FOR UPDATE) for the whole inserting transaction and allocates
// addresses.last_sequence + 1 under that lock.
// Group commit: deliveries arriving while a batch commits go together in the next transaction
// (ra_append_events, migration 0003; append-batcher.ts), one commit flush for all; a batch takes
// its address locks in id order, the same on every instance, so batches cannot deadlock. Appends to one address
// therefore run one after another across all instances: sequences are gapless, and a later
// sequence cannot commit before an earlier one (a reader's cursor can never skip an event).
// The primary key (address_id, sequence) makes a bug fail loudly instead of reordering a queue.
// Dedupe: the key is looked up under the same lock, which a concurrent same-key append held
// until it committed, so the lookup sees its event; the partial unique index is the backstop
// (a violation rolls back and the append is retried, then finds the event).
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
import type { ApprovalAnswerRecord, ApprovalRecord, ApprovalStep, ApprovalStepResult } from '../../approvals/approval-model.js';
import { BLOB_CHUNK_BYTES, type BlobInput, type BlobName, blobBytes, type StoredBlob } from '../../blobs/event-blob.js';
import type { ClaimBatch, ClaimRequest, Settlement, SettleResult } from '../../claims/claim-rules.js';
import type { ConsumerPositions } from '../../consumers/consumer-positions.js';
import { type EventFilter, SCAN_BYTES, SCAN_EVENTS } from '../../domain/event-filter.js';
import type { AddressRecord, AppendResult, EventPageRecord, EventRecord, NewEvent, RateDecision, ScanPageRecord } from '../../domain/model.js';
import { type Log, SILENT_LOG, type Store, StoreClosedError, type StoreLimits } from '../../domain/ports.js';
import { retryAfterSeconds, staleRateWindowsBefore, windowStartOf } from '../../domain/rate-window.js';
import type { SubscriptionStore } from '../../push/subscription-store.js';
import type { SenderPolicyStore } from '../../sender-policy/sender-policy-store.js';
import { APPROVAL_COLUMNS, type ApprovalAnswerRow, type ApprovalRow, approvalValues, toAnswer, toApproval } from '../approval-rows.js';
import { filterSql, filterSqlParts, needsDataJson, postgresJsonb, type ScanRow, SqlParams, scanPage, scanSql } from '../event-filter-sql.js';
import {
  ADDRESS_COLUMNS,
  type AddressRow,
  boundedPageSql,
  cutPage,
  EVENT_COLUMNS,
  EVENT_ID_TIME_SQL,
  type EventRow,
  releaseSql,
  toAddress,
  toEvent,
} from '../rows.js';
import { jsonBytesSql } from '../stored-bytes-sql.js';
import { AppendBatcher } from './append-batcher.js';
import { ChangeListener, type ListenerState } from './change-listener.js';
import { runMigrations } from './migrator.js';
import { PostgresClaims } from './postgres-claims.js';
import { PostgresConsumerPositions } from './postgres-consumers.js';
import { PostgresSenderPolicies } from './postgres-sender-policies.js';
import { PostgresSubscriptions } from './postgres-subscriptions.js';

const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'migrations');

/** The NOTIFY channel; the payload is the id of the address that changed. */
export const CHANGE_CHANNEL = 'ra_address_changed';
export const APPLICATION_NAME = 'return-address';
export const LISTENER_APPLICATION_NAME = 'return-address-listener';
export const READS_APPLICATION_NAME = 'return-address-reads';

/** /readyz fails once the listener has been disconnected this long (wake-ups would be late). */
const LISTENER_DOWN_UNREADY_MS = 10_000;
/** Retries of an append whose dedupe key was committed concurrently (the backstop fired). */
const APPEND_ATTEMPTS = 3;

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

function isUniqueViolation(err: unknown, constraint: string): boolean {
  const e = err as { code?: unknown; constraint?: unknown } | null;
  return e !== null && typeof e === 'object' && e.code === '23505' && e.constraint === constraint;
}

type EventRowOrNull = { [K in keyof EventRow]: EventRow[K] | null };

interface AppendInput {
  event: NewEvent;
  limits: StoreLimits;
}

function toAppendResult(row: EventRowOrNull & { outcome: string }): AppendResult {
  switch (row.outcome) {
    case 'created':
      return { kind: 'created', event: toEvent(row as EventRow) };
    case 'duplicate':
      return { kind: 'duplicate', event: toEvent(row as EventRow) };
    case 'queue_full':
      return { kind: 'queue_full' };
    case 'address_gone':
      return { kind: 'address_gone' };
    default:
      throw new Error(`the append function answered ${JSON.stringify(row.outcome)}`);
  }
}

/**
 * Marks the created events that are to be quarantined, inside the append's transaction, and sets
 * quarantinedAt on their results (the append functions return rows without it). `sorted[i]` is the
 * event whose result is `results[order[i]]`.
 */
async function markQuarantined(client: pg.PoolClient, sorted: readonly NewEvent[], results: AppendResult[], order: readonly number[]): Promise<void> {
  const marks: { addressId: string; sequence: number; at: number; i: number }[] = [];
  sorted.forEach((e, i) => {
    const result = results[order[i]!];
    if (e.quarantinedAt != null && result?.kind === 'created') marks.push({ addressId: e.addressId, sequence: result.event.sequence, at: e.quarantinedAt, i });
  });
  if (marks.length === 0) return;
  await client.query(
    `UPDATE events e SET quarantined_at = v.t FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS v(a, s, t)
     WHERE e.address_id = v.a AND e.sequence = v.s`,
    [marks.map((m) => m.addressId), marks.map((m) => m.sequence), marks.map((m) => m.at)],
  );
  for (const m of marks) {
    const result = results[order[m.i]!];
    if (result?.kind === 'created') results[order[m.i]!] = { kind: 'created', event: { ...result.event, quarantinedAt: m.at, releasedAt: null } };
  }
}

const compareIds = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export class PostgresStore implements Store {
  readonly kind = 'postgres' as const;
  readonly capabilities = { crossInstanceWakeups: true };
  readonly consumers: ConsumerPositions;
  /** Sender policies (src/sender-policy/), beside the Store port rather than in it. */
  readonly senderPolicies: SenderPolicyStore;
  readonly subscriptions: SubscriptionStore;
  private readonly clientConfig: pg.ClientConfig;
  private readonly pool: pg.Pool;
  /** Reads that can take long or come in crowds: never on `pool`, so they cannot hold a delivery up. */
  private readonly readPool: pg.Pool;
  private readonly claims: PostgresClaims;
  private listener: ChangeListener | undefined;
  private readonly log: Log;
  private closing: Promise<void> | undefined;
  private readonly appends = new AppendBatcher<AppendInput, AppendResult>(
    (inputs) => this.appendBatch(inputs),
    (input) => this.appendAlone(input),
    {
      maxBatch: 500,
      maxBatchBytes: 4 * 1024 * 1024,
      aloneFromBytes: 64 * 1024,
      // String lengths, not UTF-8 bytes: a bound, not an invoice, and free to compute.
      // An event with blobs always goes alone: its blobs are inserted in its own transaction (appendOnce).
      sizeOf: ({ event }) => event.data.length + (event.metadata?.length ?? 0) + (event.blobs?.length ? 64 * 1024 : 0),
    },
  );

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
    this.claims = new PostgresClaims(this.readPool, this.pool, CHANGE_CHANNEL);
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
    await this.pool.query('SELECT 1');
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

  async subscribe(onAddressChanged: (addressId: string) => void, onResync: () => void): Promise<void> {
    if (this.listener) throw new Error('already subscribed');
    this.listener = new ChangeListener({
      clientConfig: { ...this.clientConfig, application_name: LISTENER_APPLICATION_NAME, query_timeout: 5_000 },
      channel: CHANGE_CHANNEL,
      onNotification: onAddressChanged,
      onListening: onResync,
      log: this.log,
    });
    await this.listener.start();
  }

  async createAddress(a: AddressRecord, rate: { key: string; limit: number; windowMs: number; now: number }): Promise<RateDecision> {
    const windowStart = windowStartOf(rate.now, rate.windowMs);
    // One statement, so one atomic step: count the attempt in the window row (locked by the
    // upsert, shared by every instance) and insert the address only if the count was allowed.
    // A refused attempt updates nothing and inserts nothing. The rule is domain/rate-window.ts's
    // countAttempt: a later window resets the count; an earlier one (a lagging clock on another
    // instance) counts against the stored window.
    const r = await this.pool.query(
      `WITH counted AS (
         INSERT INTO rate_windows AS w (key, window_start, count) VALUES ($1, $2, 1)
         ON CONFLICT (key) DO UPDATE
           SET window_start = GREATEST(w.window_start, EXCLUDED.window_start),
               count = CASE WHEN EXCLUDED.window_start > w.window_start THEN 1 ELSE w.count + 1 END
           WHERE EXCLUDED.window_start > w.window_start OR w.count < $3::bigint
         RETURNING 1
       )
       INSERT INTO addresses (${ADDRESS_COLUMNS}, created_ip)
       SELECT $4::text, $5::text, $6::text, $7::text, $8::bytea, $9::bytea, $10::bytea, $11::bigint, $12::bigint, $13::text FROM counted`,
      [
        rate.key,
        windowStart,
        rate.limit,
        a.id,
        a.slug,
        a.name,
        a.taskId,
        a.readTokenHash,
        a.inboxSecretHash,
        a.signingKeys,
        a.createdAt,
        a.expiresAt,
        a.createdIp ?? null,
      ],
    );
    if (r.rowCount === 1) return { allowed: true };
    // Refused: the wait runs to the end of the stored window, which a lagging clock's attempt
    // did not open (one more read, on the rare refused path only).
    const w = await this.pool.query<{ window_start: string }>('SELECT window_start FROM rate_windows WHERE key = $1', [rate.key]);
    const stored = Math.max(windowStart, Number(w.rows[0]?.window_start ?? windowStart));
    return { allowed: false, retryAfterSeconds: retryAfterSeconds(stored, rate.windowMs, rate.now) };
  }

  async countRate(rate: { key: string; limit: number; windowMs: number; now: number }): Promise<RateDecision> {
    // The create limit's upsert (createAddress), alone: one row per key shared by every instance.
    const windowStart = windowStartOf(rate.now, rate.windowMs);
    const r = await this.pool.query(
      `INSERT INTO rate_windows AS w (key, window_start, count) VALUES ($1, $2, 1)
       ON CONFLICT (key) DO UPDATE
         SET window_start = GREATEST(w.window_start, EXCLUDED.window_start),
             count = CASE WHEN EXCLUDED.window_start > w.window_start THEN 1 ELSE w.count + 1 END
         WHERE EXCLUDED.window_start > w.window_start OR w.count < $3::bigint`,
      [rate.key, windowStart, rate.limit],
    );
    if (r.rowCount === 1) return { allowed: true };
    const w = await this.pool.query<{ window_start: string }>('SELECT window_start FROM rate_windows WHERE key = $1', [rate.key]);
    const stored = Math.max(windowStart, Number(w.rows[0]?.window_start ?? windowStart));
    return { allowed: false, retryAfterSeconds: retryAfterSeconds(stored, rate.windowMs, rate.now) };
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

  async queueTotals(countCap: number): Promise<{ stored: number; unacknowledged: number; oldestUnacknowledgedAt: number | null }> {
    const r = await this.readPool.query<{ stored: string; unacked: string; oldest: string | null }>(
      `SELECT (SELECT coalesce(sum(event_count), 0) FROM addresses) AS stored,
              (SELECT count(*) FROM (SELECT 1 FROM events WHERE acknowledged_at IS NULL LIMIT $1) s) AS unacked,
              (SELECT min(created_at) FROM events WHERE acknowledged_at IS NULL) AS oldest`,
      [countCap],
    );
    const row = r.rows[0]!;
    return { stored: Number(row.stored), unacknowledged: Number(row.unacked), oldestUnacknowledgedAt: row.oldest === null ? null : Number(row.oldest) };
  }

  async getAddress(id: string): Promise<AddressRecord | null> {
    const r = await this.pool.query<AddressRow>(`SELECT ${ADDRESS_COLUMNS} FROM addresses WHERE id = $1`, [id]);
    return r.rows[0] ? toAddress(r.rows[0]) : null;
  }

  async getAddressBySlug(slug: string): Promise<AddressRecord | null> {
    const r = await this.pool.query<AddressRow>(`SELECT ${ADDRESS_COLUMNS} FROM addresses WHERE slug = $1`, [slug]);
    return r.rows[0] ? toAddress(r.rows[0]) : null;
  }

  async getSigningSecrets(addressId: string): Promise<Buffer | null | undefined> {
    const r = await this.pool.query<{ signing_secrets: Buffer | null }>('SELECT signing_secrets FROM addresses WHERE id = $1', [addressId]);
    return r.rows[0] === undefined ? undefined : r.rows[0].signing_secrets;
  }

  async setSigningSecrets(addressId: string, sealed: Buffer | null): Promise<boolean> {
    const r = await this.pool.query('UPDATE addresses SET signing_secrets = $1 WHERE id = $2', [sealed, addressId]);
    return r.rowCount === 1;
  }

  async deleteAddress(id: string): Promise<boolean> {
    // The events go by ON DELETE CASCADE; the NOTIFY is delivered at commit.
    const r = await this.pool.query(
      `WITH gone AS (DELETE FROM addresses WHERE id = $1 RETURNING id)
       SELECT pg_notify($2, id) FROM gone`,
      [id, CHANGE_CHANNEL],
    );
    return r.rowCount === 1;
  }

  async deleteExpired(cutoff: number, batchSize: number): Promise<string[]> {
    // SKIP LOCKED: concurrent sweepers on other instances take disjoint batches, and an address
    // locked by an append in progress is left for the next sweep instead of being waited on.
    const r = await this.pool.query<{ id: string }>(
      `WITH victims AS (
         SELECT id FROM addresses WHERE expires_at < $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED
       ), gone AS (
         DELETE FROM addresses a USING victims v WHERE a.id = v.id RETURNING a.id
       )
       SELECT id, pg_notify($3, id) FROM gone`,
      [cutoff, batchSize, CHANGE_CHANNEL],
    );
    await this.pool.query('DELETE FROM rate_windows WHERE window_start < $1', [staleRateWindowsBefore(cutoff)]);
    return r.rows.map((row) => row.id);
  }

  appendEvent(event: NewEvent, limits: StoreLimits): Promise<AppendResult> {
    if (this.closing) return Promise.reject(new StoreClosedError());
    return this.appends.submit({ event, limits });
  }

  /** A batch in one transaction (ra_append_events, migration 0012), locking addresses in id order. */
  private async appendBatch(inputs: AppendInput[]): Promise<AppendResult[]> {
    // Stable sort: one lock order for every batch on every instance (no deadlock), and each
    // address's deliveries keep their arrival order.
    const order = inputs.map((_, i) => i).sort((a, b) => compareIds(inputs[a]!.event.addressId, inputs[b]!.event.addressId));
    const sorted = order.map((i) => inputs[i]!.event);
    // A batch holding an event to quarantine runs in a transaction of its own that marks those events
    // before COMMIT (migration 0013): no reader, on any instance, sees one unmarked. Others stay one statement.
    const quarantines = sorted.some((e) => e.quarantinedAt != null);
    const client = quarantines ? await this.pool.connect() : this.pool;
    try {
      if (quarantines) await client.query('BEGIN');
      const results = await this.appendSorted(client, inputs, order, sorted);
      if (quarantines) {
        await markQuarantined(client as pg.PoolClient, sorted, results, order);
        await client.query('COMMIT');
        (client as pg.PoolClient).release();
      }
      return results;
    } catch (err) {
      // A failed transaction is rolled back by discarding its connection (it may be broken anyway).
      if (quarantines) (client as pg.PoolClient).release(err instanceof Error ? err : true);
      throw err;
    }
  }

  private async appendSorted(client: pg.Pool | pg.PoolClient, inputs: AppendInput[], order: number[], sorted: NewEvent[]): Promise<AppendResult[]> {
    const r = await client.query<EventRowOrNull & { ord: number; outcome: string }>(
      'SELECT * FROM ra_append_events($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)',
      [
        sorted.map((e) => e.addressId),
        sorted.map((e) => e.id),
        sorted.map((e) => e.type),
        sorted.map((e) => e.source),
        sorted.map((e) => e.data),
        sorted.map((e) => e.metadata),
        sorted.map((e) => e.dedupeKey),
        sorted.map((e) => e.trust),
        sorted.map((e) => e.createdAt),
        inputs[0]!.limits.maxEventsPerAddress,
        inputs[0]!.limits.maxBytesPerAddress,
        CHANGE_CHANNEL,
      ],
    );
    if (r.rows.length !== inputs.length) throw new Error(`ra_append_events answered ${r.rows.length} rows for ${inputs.length} events`);
    const results = new Array<AppendResult>(inputs.length);
    for (const row of r.rows) results[order[row.ord - 1]!] = toAppendResult(row);
    return results;
  }

  /** One delivery alone, with the unique-index backstop retried (the retry finds the winner). */
  private async appendAlone({ event, limits }: AppendInput): Promise<AppendResult> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.appendOnce(event, limits);
      } catch (err) {
        if (attempt < APPEND_ATTEMPTS && isUniqueViolation(err, 'events_dedupe_key')) continue;
        throw err;
      }
    }
  }

  /** One round trip: ra_append_event (migration 0012) locks, dedupes, prunes, inserts and notifies. */
  private async appendOnce(e: NewEvent, limits: StoreLimits): Promise<AppendResult> {
    if ((e.blobs !== undefined && e.blobs.length > 0) || e.quarantinedAt != null) return this.appendWithBlobs(e, e.blobs ?? [], limits);
    const r = await this.pool.query<EventRowOrNull & { outcome: string }>(
      'SELECT * FROM ra_append_event($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 0)',
      [
        e.addressId,
        e.id,
        e.type,
        e.source,
        e.data,
        e.metadata,
        e.dedupeKey,
        e.trust,
        e.createdAt,
        limits.maxEventsPerAddress,
        limits.maxBytesPerAddress,
        CHANGE_CHANNEL,
      ],
    );
    const row = r.rows[0];
    if (!row) throw new Error('ra_append_event answered no row');
    return toAppendResult(row);
  }

  /**
   * An event and its blobs in one transaction (migration 0006): the append function counts the
   * blobs' bytes toward the quota, and the blobs are inserted only when the event is new. COMMIT
   * returns before the caller is answered, as for every append. An event to quarantine is marked
   * in the same transaction (migration 0013).
   */
  private async appendWithBlobs(e: NewEvent, blobs: readonly BlobInput[], limits: StoreLimits): Promise<AppendResult> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const r = await client.query<EventRowOrNull & { outcome: string }>(
        'SELECT * FROM ra_append_event($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)',
        [
          e.addressId,
          e.id,
          e.type,
          e.source,
          e.data,
          e.metadata,
          e.dedupeKey,
          e.trust,
          e.createdAt,
          limits.maxEventsPerAddress,
          limits.maxBytesPerAddress,
          CHANGE_CHANNEL,
          blobBytes(blobs),
        ],
      );
      const row = r.rows[0];
      if (!row) throw new Error('ra_append_event answered no row');
      const result = toAppendResult(row);
      await markQuarantined(client, [e], [result], [0]);
      if (result.kind === 'created') {
        for (const b of blobs) {
          await client.query('INSERT INTO event_blobs (address_id, sequence, name, content_type, sha256, size, bytes) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
            e.addressId,
            result.event.sequence,
            b.name,
            b.contentType,
            b.sha256,
            b.bytes.byteLength,
            Buffer.from(b.bytes.buffer, b.bytes.byteOffset, b.bytes.byteLength),
          ]);
        }
      }
      await client.query('COMMIT');
      client.release();
      return result;
    } catch (err) {
      // A failed transaction is rolled back by discarding its connection (it may be broken anyway).
      client.release(err instanceof Error ? err : true);
      throw err;
    }
  }

  async openBlob(addressId: string, eventId: string, name: BlobName): Promise<StoredBlob | null> {
    const r = await this.readPool.query<{ sequence: string; content_type: string; sha256: string; size: string }>(
      `SELECT b.sequence, b.content_type, b.sha256, b.size FROM events e
       JOIN event_blobs b ON b.address_id = e.address_id AND b.sequence = e.sequence
       WHERE substr(e.id, 10, 9) = substr($1::text, 10, 9) AND e.id = $1 AND e.address_id = $2 AND b.name = $3`,
      [eventId, addressId, name],
    );
    const b = r.rows[0];
    if (!b) return null;
    const pool = this.readPool;
    const size = Number(b.size);
    return {
      contentType: b.content_type,
      size,
      sha256: b.sha256,
      async *chunks() {
        // STORAGE EXTERNAL (migration 0006): each substring reads only its chunk's TOAST pages.
        for (let offset = 0; offset < size; offset += BLOB_CHUNK_BYTES) {
          const c = await pool.query<{ chunk: Buffer | null }>(
            'SELECT substring(bytes FROM $1 FOR $2) AS chunk FROM event_blobs WHERE address_id = $3 AND sequence = $4 AND name = $5',
            [offset + 1, BLOB_CHUNK_BYTES, addressId, b.sequence, name],
          );
          const chunk = c.rows[0]?.chunk;
          if (!chunk) throw new Error('the blob was deleted while it was being read');
          yield chunk;
        }
      },
    };
  }

  async listEvents(addressId: string, after: number, limit: number, maxBytes: number): Promise<EventPageRecord | null> {
    // One statement: no row when the address does not exist, one row of NULLs when its page is empty.
    const r = await this.readPool.query<{ [K in keyof EventRow]: EventRow[K] | null } & { fetched: string | null }>(
      `SELECT e.* FROM addresses a
       LEFT JOIN LATERAL (${boundedPageSql(jsonBytesSql('postgres'), {
         address: 'a.id',
         after: '$2',
         below: null,
         limit: '$3',
         budget: '$4',
       })}) e ON true
       WHERE a.id = $1`,
      [addressId, after, limit + 1, maxBytes],
    );
    if (r.rows.length === 0) return null;
    const { rows, hasMore } = cutPage(
      r.rows.filter((row): row is EventRow & { fetched: string } => row.id !== null),
      limit,
    );
    return { events: rows.map(toEvent), hasMore };
  }

  /** A filtered read in one statement (event-filter-sql.ts); `data` is cast to jsonb once per event that passes the rest of the filter, only when the filter reads it. */
  async scanEvents(addressId: string, after: number, filter: EventFilter, limit: number, maxBytes: number): Promise<ScanPageRecord | null> {
    const p = new SqlParams('postgres');
    const sql = scanSql({
      address: p.add(addressId),
      after: p.add(after),
      below: null,
      scanEvents: SCAN_EVENTS,
      scanBytes: SCAN_BYTES,
      limit: `${p.add(limit + 1)}::bigint`,
      budget: p.add(maxBytes),
      bytes: jsonBytesSql('postgres'),
      ...(needsDataJson(filter)
        ? (({ plain, json }) => ({ filter: plain, dataJson: { expr: postgresJsonb('data'), filter: json } }))(filterSqlParts(filter, p))
        : { filter: filterSql(filter, p), dataJson: null }),
    });
    const r = await this.readPool.query<ScanRow>(sql, p.bound());
    return scanPage(r.rows, after, limit);
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

  async createApproval(a: ApprovalRecord): Promise<boolean> {
    const r = await this.pool.query(
      `INSERT INTO approvals (${APPROVAL_COLUMNS})
       SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13 WHERE EXISTS (SELECT 1 FROM addresses WHERE id = $2)`,
      approvalValues(a),
    );
    return r.rowCount === 1;
  }

  async getApproval(approvalId: string): Promise<{ approval: ApprovalRecord; answers: ApprovalAnswerRecord[] } | null> {
    const r = await this.pool.query<ApprovalRow>(`SELECT ${APPROVAL_COLUMNS} FROM approvals WHERE id = $1`, [approvalId]);
    if (!r.rows[0]) return null;
    const answers = await this.pool.query<ApprovalAnswerRow>('SELECT n, event_id, answer FROM approval_answers WHERE approval_id = $1 ORDER BY n', [
      approvalId,
    ]);
    return { approval: toApproval(r.rows[0]), answers: answers.rows.map(toAnswer) };
  }

  async dueApprovals(now: number, limit: number): Promise<ApprovalRecord[]> {
    const r = await this.pool.query<ApprovalRow>(
      `SELECT ${APPROVAL_COLUMNS} FROM approvals WHERE status = 'pending' AND expires_at <= $1 ORDER BY expires_at LIMIT $2`,
      [now, limit],
    );
    return r.rows.map(toApproval);
  }

  /** One round trip: ra_approval_step (migration 0012) checks and changes the approval and appends its event, in one transaction. */
  async approvalStep(step: ApprovalStep, limits: StoreLimits): Promise<ApprovalStepResult> {
    if (this.closing) throw new StoreClosedError();
    const e = step.event;
    const r = await this.pool.query<EventRowOrNull & { outcome: string }>('SELECT * FROM ra_approval_step($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)', [
      step.kind,
      step.approvalId,
      e.addressId,
      e.id,
      e.type,
      e.source,
      e.data,
      e.trust,
      e.createdAt,
      limits.maxEventsPerAddress,
      limits.maxBytesPerAddress,
      CHANGE_CHANNEL,
    ]);
    const row = r.rows[0];
    if (!row) throw new Error('ra_approval_step answered no row');
    if (row.outcome === 'refused' || row.outcome === 'closed') return { kind: row.outcome };
    return toAppendResult(row);
  }
}
