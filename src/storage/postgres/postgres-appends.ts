// The PostgreSQL store's appends (design.md, "Gapless sequences across instances"). An append (the
// ra_append_event function) locks its address row (SELECT … FOR UPDATE) for the whole inserting
// transaction and allocates addresses.last_sequence + 1 under that lock.
// Group commit: deliveries arriving while a batch commits go together in the next transaction
// (ra_append_events; append-batcher.ts), one commit flush for all; a batch takes its address locks
// in id order, the same on every instance, so batches cannot deadlock. Appends to one address
// therefore run one after another across all instances: sequences are gapless, and a later
// sequence cannot commit before an earlier one (a reader's cursor can never skip an event).
// Dedupe: the key is looked up under the same lock, which a concurrent same-key append held until it
// committed, so the lookup sees its event; the partial unique index is the backstop (a violation
// rolls back and the append is retried, then finds the event).
import type pg from 'pg';
import { type BlobInput, blobBytes } from '../../blobs/event-blob.js';
import type { AppendResult, NewEvent } from '../../domain/model.js';
import type { StoreLimits } from '../../domain/ports.js';
import { type EventRow, toEvent } from '../rows.js';
import { AppendBatcher } from './append-batcher.js';

/** Retries of an append whose dedupe key was committed concurrently (the backstop fired). */
const APPEND_ATTEMPTS = 3;

export type EventRowOrNull = { [K in keyof EventRow]: EventRow[K] | null };

export interface AppendInput {
  event: NewEvent;
  limits: StoreLimits;
}

function isUniqueViolation(err: unknown, constraint: string): boolean {
  const e = err as { code?: unknown; constraint?: unknown } | null;
  return e !== null && typeof e === 'object' && e.code === '23505' && e.constraint === constraint;
}

/** The row an append function answers, as the port's result. */
export function toAppendResult(row: EventRowOrNull & { outcome: string }): AppendResult {
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

export class PostgresAppends {
  private readonly batcher = new AppendBatcher<AppendInput, AppendResult>(
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

  constructor(
    /** The writes pool: deliveries never wait for a read's connection. */
    private readonly pool: pg.Pool,
    private readonly channel: string,
  ) {}

  submit(input: AppendInput): Promise<AppendResult> {
    return this.batcher.submit(input);
  }

  whenIdle(): Promise<void> {
    return this.batcher.whenIdle();
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
        this.channel,
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

  /** The first twelve parameters of ra_append_event (migration 0016); the blobs' bytes come last. */
  private params(e: NewEvent, limits: StoreLimits): unknown[] {
    return [
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
      this.channel,
    ];
  }

  /** One round trip: ra_append_event (migration 0016) locks, dedupes, prunes, inserts and notifies. */
  private async appendOnce(e: NewEvent, limits: StoreLimits): Promise<AppendResult> {
    if ((e.blobs !== undefined && e.blobs.length > 0) || e.quarantinedAt != null) return this.appendWithBlobs(e, e.blobs ?? [], limits);
    const r = await this.pool.query<EventRowOrNull & { outcome: string }>(
      'SELECT * FROM ra_append_event($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 0)',
      this.params(e, limits),
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
        [...this.params(e, limits), blobBytes(blobs)],
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
}
