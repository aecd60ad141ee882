// Approvals over the queue (design.md, "Approvals"): creating one, reading and cancelling it with the
// read token, the public page's answers, and expiry. Every change of state is one store step that
// appends its event in the same transaction (approval-model.ts), through the same durable append
// path as any delivery, and wakes the address's readers like any new event.

import { hashSecret, newEventId, secretMatches } from '../domain/credentials.js';
import { ApiError, notFound } from '../domain/errors.js';
import type { AddressRecord, EventRecord } from '../domain/model.js';
import type { StoreLimits } from '../domain/ports.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';
import { countApproval } from '../domain/service-observer.js';
import { APPROVAL_TRUST_JSON, SERVICE_TRUST_JSON } from '../domain/trust.js';
import {
  type ApprovalAnswerRecord,
  type ApprovalField,
  type ApprovalOption,
  type ApprovalRecord,
  type ApprovalStepKind,
  approvalBytes,
} from './approval-model.js';
import {
  type AnswerInput,
  APPROVAL_ID_RE,
  APPROVAL_SECRET_RE,
  approvalLifetime,
  checkAnswer,
  checkDefinition,
  DEFAULT_OPTIONS,
  LIMITS,
  newApprovalId,
  newApprovalSecret,
} from './approval-rules.js';
import type { ApprovalStore } from './approval-store.js';

export const APPROVAL_EVENT_SOURCE = 'approval';

const QUEUE_FULL_RETRY_AFTER_SECONDS = 30;
/** One message for an unknown approval and a wrong secret, so neither can be probed. */
export const APPROVAL_NOT_FOUND = 'No approval at this URL.';

export interface ApprovalOptions {
  baseUrl: string;
  /** The shortest approval (MIN_APPROVAL_SECONDS; 60 unless the operator lowers it). */
  minApprovalSeconds: number;
  maxEventsPerAddress: number;
  maxBytesPerAddress: number;
  /** Pending approvals one address may hold (MAX_PENDING_APPROVALS). */
  maxPendingApprovals: number;
}

export interface CreateApprovalInput {
  question: string;
  details?: string;
  options?: ApprovalOption[];
  fields?: { name: string; label: string; type: ApprovalField['type']; required?: boolean; choices?: string[] }[];
  expires_in_seconds?: number;
  max_responses?: number;
}

export interface Responder {
  remoteIp: string;
  userAgent: string | undefined;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** pending past its expiry reads as expired before the sweeper has recorded it. */
export function effectiveStatus(a: ApprovalRecord, now: number): ApprovalRecord['status'] {
  return a.status === 'pending' && now >= a.expiresAt ? (a.responses > 0 ? 'decided' : 'expired') : a.status;
}

/** Built once by the composition (src/compose.ts) and shared by the routes, MCP and the sweeper; it holds no state. */
export class ApprovalService {
  constructor(
    private readonly store: ApprovalStore,
    /** Wakes the address's readers after a step appended an event (addressChanged). */
    private readonly queue: ReturnAddressService,
    private readonly opts: ApprovalOptions,
    private readonly now: () => number = Date.now,
  ) {}

  /** The shortest approval this service creates: every way in (HTTP schema, MCP tool) states the same minimum. */
  get minApprovalSeconds(): number {
    return this.opts.minApprovalSeconds;
  }

  private get limits(): StoreLimits {
    return { maxEventsPerAddress: this.opts.maxEventsPerAddress, maxBytesPerAddress: this.opts.maxBytesPerAddress };
  }

  /** The approval and the page's URL, which holds the secret: shown here once, never stored. */
  async create(address: AddressRecord, input: CreateApprovalInput): Promise<{ approval: ApprovalRecord; url: string }> {
    const options = input.options ?? DEFAULT_OPTIONS;
    const fields: ApprovalField[] = (input.fields ?? []).map((f) => ({
      name: f.name,
      label: f.label,
      type: f.type,
      required: f.required ?? false,
      ...(f.choices !== undefined ? { choices: f.choices } : {}),
    }));
    checkDefinition(options, fields);
    const createdAt = this.now();
    const seconds = approvalLifetime(input.expires_in_seconds, this.opts.minApprovalSeconds, address.expiresAt - createdAt);
    const secret = newApprovalSecret();
    const approval: ApprovalRecord = {
      id: newApprovalId(),
      addressId: address.id,
      secretHash: hashSecret(secret),
      question: input.question,
      details: input.details ?? null,
      options,
      fields,
      maxResponses: input.max_responses ?? 1,
      responses: 0,
      status: 'pending',
      createdAt,
      expiresAt: createdAt + seconds * 1000,
      closedAt: null,
    };
    const created = await this.store.createApprovalWithin(approval, {
      maxPending: this.opts.maxPendingApprovals,
      maxBytesPerAddress: this.opts.maxBytesPerAddress,
    });
    switch (created.kind) {
      case 'address_gone':
        throw notFound('Address');
      case 'too_many':
        throw new ApiError(
          'too_many_approvals',
          `This address already holds ${this.opts.maxPendingApprovals} pending approvals (MAX_PENDING_APPROVALS); cancel one (DELETE …/approvals/{approval_id}) or wait until one is answered or expires, then retry.`,
          { 'retry-after': String(QUEUE_FULL_RETRY_AFTER_SECONDS) },
        );
      case 'queue_full':
        throw new ApiError(
          'queue_full',
          `The address's byte quota (MAX_BYTES_PER_ADDRESS, ${this.opts.maxBytesPerAddress} bytes) is full: its events and approvals hold it, and pruning its acknowledged events cannot make room for this approval (${approvalBytes(approval)} bytes). Acknowledge events, or ask a shorter question, then retry.`,
          { 'retry-after': String(QUEUE_FULL_RETRY_AFTER_SECONDS) },
        );
    }
    countApproval(this.queue, 'pending');
    return { approval, url: `${this.opts.baseUrl}/approve/${approval.id}/${secret}` };
  }

  /** An approval of this address with its answers; 404 for another address's. */
  async get(address: AddressRecord, approvalId: string): Promise<{ approval: ApprovalRecord; answers: ApprovalAnswerRecord[] }> {
    const found = APPROVAL_ID_RE.test(approvalId) ? await this.store.getApproval(approvalId) : null;
    if (!found || found.approval.addressId !== address.id) throw notFound('Approval');
    return found;
  }

  /** DELETE: approval.cancelled; 409 approval_closed when it is no longer pending. */
  async cancel(address: AddressRecord, approvalId: string): Promise<{ approval: ApprovalRecord; answers: ApprovalAnswerRecord[] }> {
    const { approval } = await this.get(address, approvalId);
    const now = this.now();
    await this.step('cancel', approval, { approval_id: approval.id, question: approval.question, cancelled_at: iso(now) }, now);
    return this.get(address, approvalId);
  }

  /** The approval behind a page URL; one 404 for an unknown id and a wrong secret. */
  async open(approvalId: string, secret: string): Promise<ApprovalRecord> {
    const found = APPROVAL_ID_RE.test(approvalId) && APPROVAL_SECRET_RE.test(secret) ? await this.store.getApproval(approvalId) : null;
    // Hashed and compared in constant time even for an unknown id's shape-valid secret, like the inbox.
    if (!found || !secretMatches(secret, found.approval.secretHash)) throw new ApiError('not_found', APPROVAL_NOT_FOUND);
    return found.approval;
  }

  /**
   * A POST to the page: checks the answer (400 naming the field, nothing recorded), then records it
   * with approval.decided, durably, or 409 approval_closed once max_responses answers are in, after
   * expiry or a cancellation.
   */
  async respond(
    approval: ApprovalRecord,
    input: AnswerInput,
    fromForm: boolean,
    responder: Responder,
  ): Promise<{ event: EventRecord; approval: ApprovalRecord }> {
    const now = this.now();
    if (effectiveStatus(approval, now) !== 'pending') throw closed(approval, now);
    const answer = checkAnswer(input, approval, fromForm);
    const event = await this.step(
      'respond',
      approval,
      {
        approval_id: approval.id,
        question: approval.question,
        option: answer.option.id,
        label: answer.option.label,
        reason: answer.reason,
        fields: answer.fields,
        responder: { remote_ip: responder.remoteIp, user_agent: responder.userAgent?.slice(0, LIMITS.userAgent) ?? null },
        decided_at: iso(now),
      },
      now,
    );
    const after = await this.store.getApproval(approval.id);
    return { event: event as EventRecord, approval: after?.approval ?? approval };
  }

  /** Appends approval.expired once for each pending approval past its expiry (several instances may run this at once). */
  async sweepDue(batchSize = 100): Promise<number> {
    let total = 0;
    for (;;) {
      const now = this.now();
      const due = await this.store.dueApprovals(now, batchSize);
      for (const a of due) {
        // refused: another instance (or a last answer) got there first; a full queue is retried next sweep.
        const r = await this.store.approvalStep(
          {
            kind: 'expire',
            approvalId: a.id,
            event: this.event(a, 'expire', { approval_id: a.id, question: a.question, expired_at: iso(a.expiresAt) }, now),
          },
          this.limits,
        );
        if (r.kind === 'created') {
          this.queue.addressChanged(a.addressId);
          countApproval(this.queue, 'expired');
          total++;
        }
      }
      if (due.length < batchSize) return total;
    }
  }

  private event(a: ApprovalRecord, kind: ApprovalStepKind, data: object, now: number) {
    const type = kind === 'respond' ? 'approval.decided' : kind === 'cancel' ? 'approval.cancelled' : 'approval.expired';
    return {
      id: newEventId(now),
      addressId: a.addressId,
      type,
      source: APPROVAL_EVENT_SOURCE,
      data: JSON.stringify(data),
      metadata: null,
      dedupeKey: null,
      // An answer came from the person holding the page's secret link; a cancel or an expiry is the service's own.
      trust: kind === 'respond' ? APPROVAL_TRUST_JSON : SERVICE_TRUST_JSON,
      createdAt: now,
    };
  }

  private async step(kind: 'respond' | 'cancel', a: ApprovalRecord, data: object, now: number): Promise<EventRecord> {
    const r = await this.store.approvalStep({ kind, approvalId: a.id, event: this.event(a, kind, data, now) }, this.limits);
    switch (r.kind) {
      case 'created':
        this.queue.addressChanged(a.addressId);
        countApproval(this.queue, kind === 'respond' ? 'decided' : 'cancelled');
        return r.event;
      case 'queue_full':
        throw new ApiError(
          'queue_full',
          "The address's queue is full, so the answer cannot be recorded; its reader must acknowledge events first. Try again later.",
          { 'retry-after': String(QUEUE_FULL_RETRY_AFTER_SECONDS) },
        );
      case 'address_gone':
        throw new ApiError('not_found', APPROVAL_NOT_FOUND);
      default: {
        // refused (or a stray duplicate): the state changed under us; say why from a fresh read.
        const fresh = await this.store.getApproval(a.id);
        if (!fresh) throw new ApiError('not_found', APPROVAL_NOT_FOUND);
        throw closed(fresh.approval, now);
      }
    }
  }
}

/** 409 approval_closed, saying why. */
export function closed(a: ApprovalRecord, now: number): ApiError {
  return new ApiError('approval_closed', closedReason(a, now));
}

export function closedReason(a: ApprovalRecord, now: number): string {
  switch (effectiveStatus(a, now)) {
    case 'cancelled':
      return 'This approval was cancelled; it takes no more answers.';
    case 'expired':
      return `This approval expired at ${iso(a.expiresAt)} without an answer; it takes no more answers.`;
    case 'decided':
      return a.responses >= a.maxResponses
        ? `This approval has all the answers it asked for (${a.maxResponses}); it takes no more.`
        : `This approval closed at ${iso(a.expiresAt)}; it takes no more answers.`;
    default:
      return 'This approval takes answers.';
  }
}
