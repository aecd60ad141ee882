// Claims for several workers sharing one address (design.md, "Claims"): the rules every way in (HTTP,
// MCP, the clients through HTTP) shares. The store decides who holds what (claim-sql.ts); this file
// checks the input, makes the lease ids' nonce, holds a waiting claim on the follower
// (claim-wait.ts) and turns the store's outcomes into the API's errors.
import { ApiError, notFound } from '../domain/errors.js';
import { parseEventFilter } from '../domain/event-filter.js';
import type { AddressRecord, EventRecord } from '../domain/model.js';
import type { WakeupHub } from '../domain/ports.js';
import { STORABLE_TEXT_RE } from '../domain/storable-text.js';
import { ClaimRounds } from './claim-rounds.js';
import { CLAIM_LIMITS, type ClaimBatch, leaseEventId, newLeaseNonce, type Settlement } from './claim-rules.js';
import type { ClaimStore } from './claim-store.js';
import { type ClaimCallback, ClaimWait } from './claim-wait.js';

/** A claim as the API takes it (defaults filled in by the caller's schema, or by `claimInput`). */
export interface ClaimInput {
  max: number;
  lease_seconds: number;
  wait: number;
  max_deliveries: number;
  type?: string | readonly string[] | undefined;
  match?: string | readonly string[] | Readonly<Record<string, unknown>> | undefined;
}

export interface NackInput {
  delay_seconds?: number | undefined;
  reason?: string | undefined;
  dead?: boolean | undefined;
}

type Range = { min: number; max: number; default: number };

function integerIn(name: string, v: unknown, r: Range, param: string): number {
  if (v === undefined) return r.default;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < r.min || v > r.max) {
    throw new ApiError('invalid_request', `Invalid ${param} '${name}': must be an integer from ${r.min} to ${r.max} (default ${r.default}).`);
  }
  return v;
}

/** Checks and completes a claim from a caller without a schema of its own (MCP). */
export function claimInput(raw: Partial<Record<keyof ClaimInput, unknown>>, param = 'argument'): ClaimInput {
  return {
    max: integerIn('max', raw.max, CLAIM_LIMITS.max, param),
    lease_seconds: integerIn('lease_seconds', raw.lease_seconds, CLAIM_LIMITS.lease_seconds, param),
    wait: integerIn('wait', raw.wait, CLAIM_LIMITS.wait, param),
    max_deliveries: integerIn('max_deliveries', raw.max_deliveries, CLAIM_LIMITS.max_deliveries, param),
    type: raw.type as ClaimInput['type'],
    match: raw.match as ClaimInput['match'],
  };
}

/** Checks a nack's body from a caller without a schema of its own. */
export function nackInput(raw: Partial<Record<keyof NackInput, unknown>>, param = 'argument'): NackInput {
  const reason = raw.reason;
  if (reason !== undefined && (typeof reason !== 'string' || reason.length > CLAIM_LIMITS.reason_chars || !STORABLE_TEXT_RE.test(reason))) {
    throw new ApiError(
      'invalid_request',
      `Invalid ${param} 'reason': a string of at most ${CLAIM_LIMITS.reason_chars} characters, without U+0000 or a lone surrogate.`,
    );
  }
  if (raw.dead !== undefined && typeof raw.dead !== 'boolean') throw new ApiError('invalid_request', `Invalid ${param} 'dead': true or false.`);
  return { delay_seconds: integerIn('delay_seconds', raw.delay_seconds, CLAIM_LIMITS.delay_seconds, param), reason, dead: raw.dead };
}

export class ClaimService {
  /** Claims of an address asking the same thing share a statement that finds nothing (claim-rounds.ts). */
  private readonly rounds = new ClaimRounds();

  constructor(
    private readonly store: ClaimStore,
    private readonly hub: WakeupHub,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * POST …/claims: leases up to `max` events; with `wait` > 0 and none claimable, holds until one is
   * (a new event, a nack, a lease or delay running out), the wait ends, the client leaves (`cancel()`
   * the result) or the service shuts down (the last three: no claims). A filter that is invalid
   * throws before anything is held.
   */
  claim(address: AddressRecord, input: ClaimInput, callback: ClaimCallback): ClaimWait {
    const filter = parseEventFilter({ type: input.type, match: input.match });
    const deadline = input.wait > 0 ? this.now() + input.wait * 1000 : undefined;
    const filterKey = JSON.stringify(filter);
    const claimOnce = (after: number): Promise<ClaimBatch> =>
      this.rounds.run(
        `${address.id} ${after} ${filterKey}`,
        async () => {
          const batch = await this.store.claimEvents(address.id, {
            max: input.max,
            leaseMs: input.lease_seconds * 1000,
            maxDeliveries: input.max_deliveries,
            filter,
            nonce: newLeaseNonce(),
            now: this.now(),
            after,
          });
          if (!batch) throw notFound('Address');
          return batch;
        },
        () => wait.live,
      );
    const wait = new ClaimWait(this.hub, address.id, claimOnce, deadline, this.now, callback, address.readTokenHash);
    wait.start();
    return wait;
  }

  /** `claim` as a promise (MCP, tests); `signal` cancels the wait. */
  claimEvents(address: AddressRecord, input: ClaimInput, signal?: AbortSignal): Promise<ClaimBatch> {
    return new Promise((resolve, reject) => {
      const onAbort = () => wait.cancel();
      const wait = this.claim(address, input, (err, batch) => {
        signal?.removeEventListener('abort', onAbort);
        if (batch) resolve(batch);
        else reject(err);
      });
      if (signal?.aborted) wait.cancel();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  ack(address: AddressRecord, leaseId: string): Promise<EventRecord> {
    return this.settle(address, leaseId, { kind: 'ack' }).then((s) => s.event);
  }

  async extend(address: AddressRecord, leaseId: string, leaseSeconds: number): Promise<number> {
    const s = await this.settle(address, leaseId, { kind: 'extend', leaseMs: leaseSeconds * 1000 });
    return s.leaseExpiresAt as number;
  }

  async nack(address: AddressRecord, leaseId: string, input: NackInput): Promise<EventRecord> {
    const s = await this.settle(address, leaseId, {
      kind: 'nack',
      delayMs: (input.delay_seconds ?? 0) * 1000,
      reason: input.reason ?? null,
      dead: input.dead ?? false,
    });
    // The event is claimable again (unless delayed or dead): claims waiting in this process re-read
    // now; other instances hear the store's notification.
    this.hub.notify(address.id);
    return s.event;
  }

  private async settle(address: AddressRecord, leaseId: string, s: Settlement): Promise<{ event: EventRecord; leaseExpiresAt: number | null }> {
    const eventId = leaseEventId(leaseId);
    if (eventId === null) throw notFound('Lease');
    const result = await this.store.settleClaim(address.id, eventId, leaseId, s, this.now());
    switch (result.outcome) {
      case 'settled':
        return result;
      case 'not_found':
        throw notFound('Lease');
      case 'lease_lost':
        throw new ApiError('lease_lost', `This lease no longer holds the event: ${result.why}`);
    }
  }
}
