// An approval as the API shows it (snake_case, like Event). The secret is never part of it; the
// url, which holds it, only in the answer to the POST that created it.
import type { ApprovalAnswerRecord, ApprovalRecord } from './approval-model.js';
import { effectiveStatus } from './approval-service.js';

const iso = (ms: number) => new Date(ms).toISOString();

export function approvalView(a: ApprovalRecord, now: number, extra: { url?: string; answers?: ApprovalAnswerRecord[] } = {}): Record<string, unknown> {
  return {
    id: a.id,
    status: effectiveStatus(a, now),
    ...(extra.url !== undefined ? { url: extra.url } : {}),
    question: a.question,
    ...(a.details !== null ? { details: a.details } : {}),
    options: a.options,
    fields: a.fields,
    max_responses: a.maxResponses,
    responses: a.responses,
    created_at: iso(a.createdAt),
    expires_at: iso(a.expiresAt),
    ...(a.closedAt !== null ? { closed_at: iso(a.closedAt) } : {}),
    ...(extra.answers ? { answers: extra.answers.map((x) => ({ n: x.n, event_id: x.eventId, ...answerData(x.answer) })) } : {}),
  };
}

function answerData(json: string): Record<string, unknown> {
  const { approval_id: _id, question: _q, ...rest } = JSON.parse(json) as Record<string, unknown>;
  return rest;
}
