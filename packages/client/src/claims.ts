// consumeClaims(): a worker among several on one address, on claims and their leases.
import { ReturnAddressError } from './errors.js';
import { MAX_WAIT_SECONDS, retrying } from './http.js';
import type { Claim, ClaimConsumeOptions, ClaimOptions, Event, LoopClient } from './types.js';

/**
 * A worker among several sharing this address (claims, at-least-once): claims one event at a
 * time, runs `handler`, acks through the lease when it resolves and nacks (with a growing delay)
 * when it throws. The lease is extended while the handler runs. An ack answered lease_lost (the
 * lease ran out and another worker took the event) is reported to `onError` and skipped.
 */
export async function consumeClaims(ra: LoopClient, handler: (event: Event, claim: Claim) => unknown, opts: ClaimConsumeOptions = {}): Promise<void> {
  const leaseSeconds = opts.leaseSeconds ?? 60;
  const ask: ClaimOptions = { max: 1, lease_seconds: leaseSeconds, wait: opts.idleSeconds ?? MAX_WAIT_SECONDS, max_deliveries: opts.maxDeliveries ?? 5 };
  if (opts.type !== undefined) ask.type = opts.type;
  if (opts.match !== undefined) ask.match = opts.match;
  for (;;) {
    if (opts.signal?.aborted) return;
    const claims = await retrying(() => ra.claim(ask, opts.signal), Number.POSITIVE_INFINITY, opts.signal, ra);
    if (claims.length === 0 && opts.idleSeconds !== undefined) return;
    for (const c of claims) {
      const keepAlive = setInterval(
        () => {
          ra.extendClaim(c.lease_id, leaseSeconds).catch(() => {});
        },
        (leaseSeconds * 1000) / 2,
      );
      let failure: { err: unknown } | undefined;
      try {
        await handler(c.event, c);
      } catch (err) {
        failure = { err };
      } finally {
        clearInterval(keepAlive);
      }
      try {
        if (failure === undefined) await retrying(() => ra.ackClaim(c.lease_id), Number.POSITIVE_INFINITY, opts.signal, ra);
        else {
          opts.onError?.(failure.err, c);
          const delay = Math.min(60, 2 ** (c.delivery_count - 1));
          await retrying(
            () => ra.nackClaim(c.lease_id, { delay_seconds: delay, reason: String((failure.err as Error)?.message ?? failure.err).slice(0, 500) }),
            Number.POSITIVE_INFINITY,
            opts.signal,
            ra,
          );
        }
      } catch (err) {
        if (!(err instanceof ReturnAddressError && err.code === 'lease_lost')) throw err;
        opts.onError?.(err, c);
      }
    }
  }
}
