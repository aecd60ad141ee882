// The SQLite store's approvals outside the group commit: creating one within its address's bounds
// (pending approvals under MAX_PENDING_APPROVALS, bytes inside MAX_BYTES_PER_ADDRESS beside the
// events, the same rule as PostgreSQL's ra_approval_room, migration 0017), and reading them. An
// approval's steps (respond, cancel, expire) append events, so they go through the group commit
// (sqlite-appends.ts).
import {
  type ApprovalAnswerRecord,
  type ApprovalLimits,
  type ApprovalRecord,
  approvalBytes,
  type CreateApprovalResult,
} from '../../approvals/approval-model.js';
import { approvalValues, toAnswer, toApproval } from '../approval-rows.js';
import { pruneAcked } from './sqlite-appends.js';
import type { QueueCounters } from './sqlite-queue-counters.js';
import type { SqliteParts } from './sqlite-statements.js';

export class SqliteApprovals {
  constructor(private readonly s: SqliteParts) {}

  /**
   * One write transaction, so the count and the bytes are read and changed with no other write in
   * between (this process is the only writer): parallel creates never pass the cap. The approval's
   * bytes join the address's event_bytes, and the row is written in the same transaction (as a
   * prune does, sqlite-queue-counters.ts's invariant).
   */
  async create(a: ApprovalRecord, limits: ApprovalLimits): Promise<CreateApprovalResult> {
    const { db, q, counters } = this.s;
    const size = approvalBytes(a);
    const outcome = db
      .transaction((): { result: CreateApprovalResult; counters?: QueueCounters; pruned?: boolean } => {
        this.s.cache.checkExternalChangesNow();
        const c = counters.load(a.addressId);
        if (!c) return { result: { kind: 'address_gone' } };
        if ((q.pendingApprovals.get(a.addressId)?.n ?? 0) >= limits.maxPending) return { result: { kind: 'too_many' } };
        let pruned = false;
        const over = c.eventBytes + size - limits.maxBytesPerAddress;
        if (over > 0) {
          const freed = pruneAcked(this.s, a.addressId, 0, over);
          if (freed === null) return { result: { kind: 'queue_full' } };
          c.eventCount -= freed.events;
          c.eventBytes -= freed.bytes;
          pruned = true;
        }
        q.insertApproval.run(...approvalValues(a));
        c.eventBytes += size;
        counters.persist(a.addressId, c);
        return { result: { kind: 'created' }, counters: c, pruned };
      })
      .immediate();
    if (outcome.counters) counters.persisted(a.addressId, outcome.counters);
    if (outcome.pruned) this.s.forget(a.addressId);
    if (outcome.result.kind === 'created') await this.s.durable();
    return outcome.result;
  }

  get(approvalId: string): { approval: ApprovalRecord; answers: ApprovalAnswerRecord[] } | null {
    const { q } = this.s;
    const r = q.approval.get(approvalId);
    return r ? { approval: toApproval(r), answers: q.approvalAnswers.all(approvalId).map(toAnswer) } : null;
  }

  due(now: number, limit: number): ApprovalRecord[] {
    return this.s.q.dueApprovals.all(now, limit).map(toApproval);
  }
}
