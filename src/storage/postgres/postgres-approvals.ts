// The PostgreSQL store's approvals: creating one within its address's bounds (ra_approval_room,
// migration 0017: pending approvals under MAX_PENDING_APPROVALS, bytes inside MAX_BYTES_PER_ADDRESS
// beside the events, the same rule as sqlite-approvals.ts), reading them, and their steps
// (ra_approval_step, migration 0012), which change the approval and append its event in one
// transaction. Writes on the writes pool.
import type pg from 'pg';
import {
  type ApprovalAnswerRecord,
  type ApprovalLimits,
  type ApprovalRecord,
  type ApprovalStep,
  type ApprovalStepResult,
  approvalBytes,
  type CreateApprovalResult,
} from '../../approvals/approval-model.js';
import type { StoreLimits } from '../../domain/ports.js';
import { APPROVAL_COLUMNS, type ApprovalAnswerRow, type ApprovalRow, approvalValues, toAnswer, toApproval } from '../approval-rows.js';
import { type EventRowOrNull, toAppendResult } from './postgres-appends.js';

const ROOM_OUTCOMES = new Set(['created', 'address_gone', 'too_many', 'queue_full']);

export class PostgresApprovals {
  constructor(
    private readonly pool: pg.Pool,
    private readonly channel: string,
  ) {}

  /**
   * One statement: ra_approval_room locks the address row (as an append does, so creates on every
   * instance are serialized per address), checks the pending count and the bytes, prunes
   * acknowledged events when that makes room, and adds the approval's bytes to event_bytes; the
   * approval is inserted only when it answered 'created'.
   */
  async create(a: ApprovalRecord, limits: ApprovalLimits): Promise<CreateApprovalResult> {
    const values = approvalValues(a);
    const n = values.length;
    const r = await this.pool.query<{ outcome: string }>(
      `WITH room AS (SELECT ra_approval_room($2::text, $${n + 1}::bigint, $${n + 2}::bigint, $${n + 3}::bigint) AS outcome),
       inserted AS (
         INSERT INTO approvals (${APPROVAL_COLUMNS})
         SELECT ${values.map((_, i) => `$${i + 1}`).join(', ')} FROM room WHERE room.outcome = 'created'
         RETURNING 1
       )
       SELECT outcome FROM room`,
      [...values, approvalBytes(a), limits.maxPending, limits.maxBytesPerAddress],
    );
    const outcome = r.rows[0]?.outcome;
    if (outcome === undefined || !ROOM_OUTCOMES.has(outcome)) throw new Error(`ra_approval_room answered ${JSON.stringify(outcome)}`);
    return { kind: outcome } as CreateApprovalResult;
  }

  async get(approvalId: string): Promise<{ approval: ApprovalRecord; answers: ApprovalAnswerRecord[] } | null> {
    const r = await this.pool.query<ApprovalRow>(`SELECT ${APPROVAL_COLUMNS} FROM approvals WHERE id = $1`, [approvalId]);
    if (!r.rows[0]) return null;
    const answers = await this.pool.query<ApprovalAnswerRow>('SELECT n, event_id, answer FROM approval_answers WHERE approval_id = $1 ORDER BY n', [
      approvalId,
    ]);
    return { approval: toApproval(r.rows[0]), answers: answers.rows.map(toAnswer) };
  }

  async due(now: number, limit: number): Promise<ApprovalRecord[]> {
    const r = await this.pool.query<ApprovalRow>(
      `SELECT ${APPROVAL_COLUMNS} FROM approvals WHERE status = 'pending' AND expires_at <= $1 ORDER BY expires_at LIMIT $2`,
      [now, limit],
    );
    return r.rows.map(toApproval);
  }

  /** One round trip: ra_approval_step (migration 0012) checks and changes the approval and appends its event, in one transaction. */
  async step(step: ApprovalStep, limits: StoreLimits): Promise<ApprovalStepResult> {
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
      this.channel,
    ]);
    const row = r.rows[0];
    if (!row) throw new Error('ra_approval_step answered no row');
    if (row.outcome === 'refused' || row.outcome === 'closed') return { kind: row.outcome };
    return toAppendResult(row);
  }
}
