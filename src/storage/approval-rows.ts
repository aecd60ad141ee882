// The approvals' columns (migrations 0009) and their mapping to records, shared by both backends.
import type { ApprovalAnswerRecord, ApprovalRecord, ApprovalStatus } from '../approvals/approval-model.js';

type Int = number | string;

export interface ApprovalRow {
  id: string;
  address_id: string;
  secret_hash: Buffer;
  question: string;
  details: string | null;
  options: string;
  fields: string;
  max_responses: Int;
  responses: Int;
  status: string;
  created_at: Int;
  expires_at: Int;
  closed_at: Int | null;
}

export interface ApprovalAnswerRow {
  n: Int;
  event_id: string;
  answer: string;
}

export const APPROVAL_COLUMNS =
  'id, address_id, secret_hash, question, details, options, fields, max_responses, responses, status, created_at, expires_at, closed_at';

export function toApproval(r: ApprovalRow): ApprovalRecord {
  return {
    id: r.id,
    addressId: r.address_id,
    secretHash: r.secret_hash,
    question: r.question,
    details: r.details,
    options: JSON.parse(r.options) as ApprovalRecord['options'],
    fields: JSON.parse(r.fields) as ApprovalRecord['fields'],
    maxResponses: Number(r.max_responses),
    responses: Number(r.responses),
    status: r.status as ApprovalStatus,
    createdAt: Number(r.created_at),
    expiresAt: Number(r.expires_at),
    closedAt: r.closed_at === null ? null : Number(r.closed_at),
  };
}

export const toAnswer = (r: ApprovalAnswerRow): ApprovalAnswerRecord => ({ n: Number(r.n), eventId: r.event_id, answer: r.answer });

/** The row's values in APPROVAL_COLUMNS order. */
export const approvalValues = (a: ApprovalRecord) => [
  a.id,
  a.addressId,
  a.secretHash,
  a.question,
  a.details,
  JSON.stringify(a.options),
  JSON.stringify(a.fields),
  a.maxResponses,
  a.responses,
  a.status,
  a.createdAt,
  a.expiresAt,
  a.closedAt,
];
