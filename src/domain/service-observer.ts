// What the service tells an observer about its work (deliveries, refusals, commits, signatures,
// approvals): the metrics (src/metrics/) implement it; without metrics it is a no-op. Every label
// value is from a fixed set, so an observer can count by them without an unbounded series.

/** Which way in a delivery came: the inbox URL, the capture URL, SMTP, or anything else built on deliver(). */
export type DeliveryRoute = 'inbox' | 'capture' | 'email' | 'other';

/**
 * How a delivery ended: stored, a duplicate of a stored event, or refused for one of these reasons
 * (`refused_other` for errors that are not the sender's: a store failure).
 */
export type DeliveryOutcome = 'created' | 'duplicate' | 'queue_full' | 'expired' | 'too_large' | 'rate_limited' | 'not_found' | 'invalid' | 'error';

/** Why a delivery was refused, whichever way it came (return_address_deliveries_refused_total's reason). */
export type RefusalReason = 'not_found' | 'invalid' | 'unauthorized' | 'too_large' | 'rate_limited' | 'queue_full' | 'expired' | 'unavailable' | 'blocked';

export interface ServiceObserver {
  delivery(route: DeliveryRoute, outcome: DeliveryOutcome): void;
  /**
   * A mail refused before any delivery was tried (an unknown recipient, a blocked or rate-limited
   * sender, no room to read it): the SMTP listener tells it; HTTP refusals are counted from answers.
   */
  mailRefused(reason: RefusalReason): void;
  /** Seconds from handing an event to the store to its durable commit (group commit included). */
  commit(seconds: number): void;
  /** A captured request's signature verdict: verified, failed, unverified (no secret set), unsigned. */
  signature(result: 'verified' | 'failed' | 'unverified' | 'unsigned'): void;
  /** An approval reached this status (the approvals room calls it). */
  approval(status: string): void;
  /** An SMTP reply at the end of RCPT TO or DATA, by its code. */
  smtp(stage: 'rcpt' | 'data', code: number): void;
}

export const NO_OBSERVER: ServiceObserver = {
  delivery() {},
  mailRefused() {},
  commit() {},
  signature() {},
  approval() {},
  smtp() {},
};

/**
 * For the approvals: count an approval step by status (pending when created, decided for each answer
 * recorded, cancelled, expired; anything else is counted as other) in return_address_approvals_total.
 */
export function countApproval(service: { observer: ServiceObserver }, status: string): void {
  service.observer.approval(status);
}
