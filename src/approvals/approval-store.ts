// What approvals need from a store (design.md, "Approvals"): keep an approval and its answers, find the
// due ones, and apply a step with its event in one transaction. Both stores implement it beside the
// Store (SQLite inside the group commit's batch; PostgreSQL `ra_approval_step`, migration 0009), and
// the composition (src/compose.ts) hands the opened store to the ApprovalService as this port.
import type { StoreLimits } from '../domain/ports.js';
import type { ApprovalAnswerRecord, ApprovalLimits, ApprovalRecord, ApprovalStep, ApprovalStepResult, CreateApprovalResult } from './approval-model.js';

export interface ApprovalStore {
  /** Stores a new approval, durably, within no bounds but its bytes counted (createApprovalWithin); false when its address does not exist. */
  createApproval(approval: ApprovalRecord): Promise<boolean>;
  /**
   * Stores a new approval, durably, only while its address holds fewer than `maxPending` pending
   * approvals and its bytes (approval-model.ts, approvalBytes) fit the byte quota beside the events,
   * after pruning acknowledged events as an append does. The bytes count for as long as the approval
   * is stored. Parallel creates, from any instance, never pass either bound.
   */
  createApprovalWithin(approval: ApprovalRecord, limits: ApprovalLimits): Promise<CreateApprovalResult>;
  /** The approval with its answers (oldest first); null when there is none with this id. */
  getApproval(approvalId: string): Promise<{ approval: ApprovalRecord; answers: ApprovalAnswerRecord[] } | null>;
  /** Pending approvals whose expiresAt is at or before `now`, soonest first. */
  dueApprovals(now: number, limit: number): Promise<ApprovalRecord[]>;
  /**
   * Changes an approval's state and appends the step's event in one transaction, only if the step's
   * condition holds (approval-model.ts); durable before it resolves, like appendEvent.
   */
  approvalStep(step: ApprovalStep, limits: StoreLimits): Promise<ApprovalStepResult>;
}
