// The SQLite store's writes of a group commit's batch (group-commit.ts): appends and approval steps,
// one transaction per batch, with the address's counters loaded once per batch and pruning of
// acknowledged events in a savepoint (design.md, "Durability: group commit", "The queue").
// Ordering: better-sqlite3 is synchronous and this process is the only writer, so every write
// transaction runs alone; sequences are allocated from the address's counters inside the same
// transaction as the insert, hence gapless. Dedupe: looked up inside that transaction, with a
// partial unique index as the backstop.
import { type ApprovalStep, type ApprovalStepResult, stepDedupeKey } from '../../approvals/approval-model.js';
import { blobBytes } from '../../blobs/event-blob.js';
import type { AppendResult, NewEvent } from '../../domain/model.js';
import type { StoreLimits } from '../../domain/ports.js';
import { roomToFree, storedBytes } from '../../domain/queue-quota.js';
import { toApproval } from '../approval-rows.js';
import { toEvent } from '../rows.js';
import type { ItemOutcome } from './group-commit.js';
import type { QueueCounters } from './sqlite-queue-counters.js';
import type { SqliteParts } from './sqlite-statements.js';

/** Thrown inside a pruning item's savepoint to roll back a prune that did not make enough room. */
export class QueueFull extends Error {}

export interface AppendInput {
  event: NewEvent;
  limits: StoreLimits;
  /** An approval's state change, made in the same transaction as the append (approvalItem). */
  approval?: ApprovalStep;
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

export class SqliteAppends {
  /** An append that must first prune acknowledged events, in a savepoint: a prune that frees too little rolls back. */
  private readonly appendAfterPrune: (e: NewEvent, c: BatchCounters, size: number, needEvents: number, needBytes: number) => AppendResult;

  constructor(
    private readonly s: SqliteParts,
    /** False for :memory: (nothing to fdatasync): a commit is durable at once, nothing is hidden. */
    private readonly hidesUndurable: boolean,
  ) {
    // Room for both limits: the shortest run of oldest acknowledged events that frees enough
    // events and bytes, or QueueFull (the savepoint undoes nothing, since nothing was written).
    this.appendAfterPrune = s.db.transaction((e: NewEvent, c: BatchCounters, size: number, needEvents: number, needBytes: number) => {
      const freed = pruneAcked(s, e.addressId, needEvents, needBytes);
      if (freed === null) throw new QueueFull();
      c.pruned = true;
      return this.insertNext(e, c, size, freed.events, freed.bytes);
    });
  }

  /**
   * One transaction for the whole batch. Items are isolated without a savepoint each: an item
   * writes with one statement, which SQLite rolls back alone if it fails; only an item that must
   * prune first takes a savepoint (a savepoint per item was a fifth of an append's cost:
   * (bench/README.md, "Measurements behind small choices")).
   */
  commit(inputs: readonly AppendInput[]): ItemOutcome<ApprovalStepResult>[] {
    const { db, cache, counters: held } = this.s;
    const outcomes = db
      .transaction(() => {
        // Under the write lock: an operator's delete committed since this turn's check is seen here,
        // before any counter held for an address it removed is used.
        cache.checkExternalChangesNow();
        // The rows of counters changed a flush interval ago, as they stand before this batch (the
        // batch's own prunes write theirs after, with the batch's values).
        const written = held.writeDue();
        const counters = new Map<string, BatchCounters | null>();
        const result = inputs.map((input): ItemOutcome<ApprovalStepResult> => {
          try {
            return { ok: true, value: input.approval ? this.approvalItem(input.approval, input.limits, counters) : this.appendItem(input, counters) };
          } catch (error) {
            if (error instanceof QueueFull) return { ok: true, value: { kind: 'queue_full' } };
            // Some errors (a full disk, an I/O error) make SQLite roll the whole transaction back:
            // the items after this one would run outside it, so the batch fails as a whole.
            if (!db.inTransaction) throw error;
            return { ok: false, error };
          }
        });
        for (const [addressId, c] of counters) if (c?.pruned) held.persist(addressId, c);
        return { result, counters, written };
      })
      .immediate();
    held.written(outcomes.written);
    for (const [addressId, c] of outcomes.counters) {
      if (!c?.changed) continue;
      const kept = { lastSequence: c.lastSequence, eventCount: c.eventCount, eventBytes: c.eventBytes, claimsIndexed: c.claimsIndexed };
      if (c.pruned) held.persisted(addressId, kept);
      else held.commit(addressId, kept);
    }
    // Committed but not durable yet: hidden from readers until markDurable. This runs in the same
    // synchronous turn as the commit, so no read can come in between.
    for (const [addressId, first] of firstCreated(outcomes.result)) {
      this.s.forget(addressId);
      if (this.hidesUndurable) this.s.visibility.hide(addressId, first);
    }
    return outcomes.result;
  }

  /** A batch is on disk: its events become visible (batches become durable in commit order). */
  markDurable(outcomes: readonly ItemOutcome<ApprovalStepResult>[]): void {
    for (const [addressId] of firstCreated(outcomes)) {
      this.s.forget(addressId);
      this.s.visibility.reveal(addressId);
    }
  }

  /**
   * An approval's step inside a batch (the same rules as PostgreSQL's ra_approval_step): this
   * process is the only writer and the batch runs alone, so reading the row and changing it in the
   * same transaction decides every race. The approval changes only if the event was created.
   * Unlike the event, the approval's row is readable as soon as the batch commits, a moment before
   * it is durable: a page may say "answered" while the answerer's 200 still waits for the fsync.
   */
  private approvalItem(step: ApprovalStep, limits: StoreLimits, counters: Map<string, BatchCounters | null>): ApprovalStepResult {
    const { q } = this.s;
    const e = step.event;
    const row = q.approval.get(step.approvalId);
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
      q.closeApproval.run('decided', a.expiresAt, a.responses, a.id);
      return { kind: 'closed' };
    }
    const result = this.appendItem({ event: { ...e, dedupeKey: stepDedupeKey(step.kind, a.id, a.responses) }, limits }, counters);
    if (result.kind !== 'created') return result;
    if (step.kind === 'respond') {
      const n = a.responses + 1;
      const full = n >= a.maxResponses;
      q.closeApproval.run(full ? 'decided' : 'pending', full ? now : null, n, a.id);
      q.insertAnswer.run(a.id, n, e.id, e.data);
    } else {
      q.closeApproval.run(step.kind === 'cancel' ? 'cancelled' : 'expired', now, a.responses, a.id);
    }
    return result;
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
      const held = this.s.counters.load(e.addressId);
      c = held ? { ...held, changed: false, pruned: false } : null;
      counters.set(e.addressId, c);
    }
    if (!c) return { kind: 'address_gone' };
    if (e.dedupeKey !== null) {
      const existing = this.s.q.eventByKey.get(e.addressId, e.dedupeKey);
      if (existing) return { kind: 'duplicate', event: toEvent(existing) };
    }
    const size = storedBytes(e.data, e.metadata, blobBytes(e.blobs));
    const room = roomToFree(c, size, limits);
    if (room !== null) return this.appendAfterPrune(e, c, size, room.events, room.bytes);
    return this.insertNext(e, c, size, 0, 0);
  }

  private insertNext(e: NewEvent, c: BatchCounters, size: number, pruned: number, prunedBytes: number): AppendResult {
    const { q } = this.s;
    const sequence = c.lastSequence + 1;
    q.insertEvent.run(
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
      q.setBlobBytes.run(blobBytes(e.blobs), e.addressId, sequence);
      for (const b of e.blobs) q.insertBlob.run(e.addressId, sequence, b.name, b.contentType, b.sha256, b.bytes.byteLength, b.bytes);
    }
    c.lastSequence = sequence;
    c.eventCount += 1 - pruned;
    c.eventBytes += size - prunedBytes;
    c.changed = true;
    const { blobs: _stored, ...record } = e;
    return { kind: 'created', event: { ...record, sequence, acknowledgedAt: null } };
  }
}

/**
 * Deletes the shortest run of the address's oldest acknowledged events that frees at least
 * `needEvents` events and `needBytes` bytes, and says what it freed; null (nothing deleted) when all
 * of them would not free that much. Inside the caller's transaction, which writes the counters.
 */
export function pruneAcked(s: SqliteParts, addressId: string, needEvents: number, needBytes: number): { events: number; bytes: number } | null {
  let events = 0;
  let bytes = 0;
  let upto = -1;
  for (const row of s.q.ackedSizes.iterate(addressId)) {
    events++;
    bytes += row.bytes;
    upto = row.sequence;
    if (events >= needEvents && bytes >= needBytes) break;
  }
  if (events < needEvents || bytes < needBytes) return null;
  s.q.pruneAckedUpTo.run(addressId, upto);
  return { events, bytes };
}

/** The first sequence each address received in a batch's outcomes (sequences ascend within a batch). */
function firstCreated(outcomes: readonly ItemOutcome<ApprovalStepResult>[]): Map<string, number> {
  const first = new Map<string, number>();
  for (const o of outcomes) {
    if (o.ok && o.value.kind === 'created' && !first.has(o.value.event.addressId)) first.set(o.value.event.addressId, o.value.event.sequence);
  }
  return first;
}
