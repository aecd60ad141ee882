// The records an approval is made of, as the stores keep them (design.md, "Approvals"). Times are epoch ms.
import { APPROVAL_KEY_PREFIX } from '../domain/dedupe-key.js';
import type { AppendResult, NewEvent } from '../domain/model.js';

export interface ApprovalOption {
  id: string;
  label: string;
}

export const FIELD_TYPES = ['text', 'textarea', 'number', 'boolean', 'select'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

export interface ApprovalField {
  name: string;
  label: string;
  type: FieldType;
  required: boolean;
  /** The allowed values of a select (and only of a select). */
  choices?: string[];
}

/** pending until max_responses answers (decided), its expiry (expired) or a DELETE (cancelled). */
export type ApprovalStatus = 'pending' | 'decided' | 'expired' | 'cancelled';

export interface ApprovalRecord {
  id: string;
  addressId: string;
  /** SHA-256 of the secret in the page's URL; the secret itself is never stored. */
  secretHash: Buffer;
  question: string;
  details: string | null;
  options: ApprovalOption[];
  fields: ApprovalField[];
  maxResponses: number;
  responses: number;
  status: ApprovalStatus;
  createdAt: number;
  expiresAt: number;
  closedAt: number | null;
}

/** An answer as recorded: its number, the approval.decided event it made, and that event's data (JSON text). */
export interface ApprovalAnswerRecord {
  n: number;
  eventId: string;
  answer: string;
}

/**
 * A change of an approval's state, made by the store in the same transaction as the event it
 * appends, and only if its condition holds then:
 * - respond: pending, not past expiry, fewer than max_responses answers (dedupe key approval:{id}:{n});
 * - cancel: pending, not past expiry (approval:{id}:cancelled);
 * - expire: pending and past expiry (approval:{id}:expired); with answers already recorded it
 *   appends nothing and only closes the approval (decided).
 */
export type ApprovalStepKind = 'respond' | 'cancel' | 'expire';

export interface ApprovalStep {
  kind: ApprovalStepKind;
  approvalId: string;
  /** The event to append; its dedupeKey is set by the store from the step. Its createdAt is the step's "now". */
  event: NewEvent;
}

export type ApprovalStepResult =
  | AppendResult
  /** The step's condition did not hold (no longer pending, expired, full, or no such approval): nothing changed. */
  | { kind: 'refused' }
  /** An expiry that found answers: the approval is closed as decided, and no event was appended. */
  | { kind: 'closed' };

/** The stored dedupe key of a step's event, given the approval's answers so far (shown as approval:{id}:{n}). */
export function stepDedupeKey(kind: ApprovalStepKind, approvalId: string, responses: number): string {
  return `${APPROVAL_KEY_PREFIX}${approvalId}:${kind === 'respond' ? String(responses + 1) : kind === 'cancel' ? 'cancelled' : 'expired'}`;
}

/** The bounds a new approval is created within; both stores check them under the address's lock. */
export interface ApprovalLimits {
  /** Pending approvals one address may hold (MAX_PENDING_APPROVALS). */
  maxPending: number;
  /** The address's byte quota (MAX_BYTES_PER_ADDRESS), which its approvals share with its events. */
  maxBytesPerAddress: number;
}

export type CreateApprovalResult =
  | { kind: 'created' }
  | { kind: 'address_gone' }
  /** The address holds maxPending pending approvals already: nothing stored. */
  | { kind: 'too_many' }
  /** Its events and approvals hold the byte quota, and pruning acknowledged events cannot make room: nothing stored. */
  | { kind: 'queue_full' };

/**
 * The bytes an approval holds of its address's byte quota, for as long as it is stored (pending or
 * closed; it goes with its address): its question, details, options and fields as stored, in UTF-8.
 * The SQL of the same is in migration 0017 of each store (the count of approvals stored before it).
 */
export function approvalBytes(a: Pick<ApprovalRecord, 'question' | 'details' | 'options' | 'fields'>): number {
  return (
    Buffer.byteLength(a.question) +
    (a.details === null ? 0 : Buffer.byteLength(a.details)) +
    Buffer.byteLength(JSON.stringify(a.options)) +
    Buffer.byteLength(JSON.stringify(a.fields))
  );
}
