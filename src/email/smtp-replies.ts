// The SMTP answer to a message, from what storing each recipient's event did (docs/design.md, "Inbound email").
// A retry re-delivers to every recipient; those already stored are deduplicated by Message-ID, so
// a transient failure of one recipient may ask the sender to retry the whole message.
import type { SMTPServerError } from 'smtp-server';
import { ApiError } from '../domain/errors.js';
import type { Delivery } from '../domain/model.js';

export function smtpError(responseCode: number, message: string): SMTPServerError {
  return Object.assign(new Error(message), { responseCode });
}

export interface DeliveryOutcome {
  /** Ids of the events stored (new or duplicate). */
  stored: string[];
  duplicates: number;
  /** Failures that were not the sender's doing (store errors), for the log. */
  transientErrors: unknown[];
  queueFull: boolean;
  /** DELIVERY_RATE_LIMIT refused a recipient: its Retry-After, in seconds. */
  rateLimited: string | undefined;
  tooLarge: boolean;
}

export function deliveryOutcome(results: readonly PromiseSettledResult<Delivery>[]): DeliveryOutcome {
  const outcome: DeliveryOutcome = { stored: [], duplicates: 0, transientErrors: [], queueFull: false, rateLimited: undefined, tooLarge: false };
  for (const r of results) {
    if (r.status === 'fulfilled') {
      outcome.stored.push(r.value.event.id);
      if (r.value.duplicate) outcome.duplicates++;
    } else if (r.reason instanceof ApiError && r.reason.code === 'queue_full') {
      outcome.queueFull = true;
    } else if (r.reason instanceof ApiError && r.reason.code === 'rate_limited') {
      // DELIVERY_RATE_LIMIT: a temporary refusal; the MTA retries later, and those stored dedupe.
      outcome.rateLimited = r.reason.headers['retry-after'];
    } else if (r.reason instanceof ApiError && r.reason.code === 'payload_too_large') {
      // Larger than a whole address may hold (MAX_BYTES_PER_ADDRESS): no retry can fit it.
      outcome.tooLarge = true;
    } else if (r.reason instanceof ApiError && (r.reason.code === 'address_expired' || r.reason.code === 'not_found')) {
      // Gone since RCPT TO: nothing to retry for this recipient.
    } else {
      outcome.transientErrors.push(r.reason);
    }
  }
  return outcome;
}

/** The 250 text, or throws the SMTP error the outcome calls for. */
export function replyFor(outcome: DeliveryOutcome): string {
  const { stored } = outcome;
  if (outcome.queueFull) throw smtpError(452, 'Mailbox full: the address holds too many unacknowledged events, try again later');
  if (outcome.transientErrors.length > 0) throw smtpError(451, 'Temporary failure storing the message, try again later');
  if (outcome.rateLimited !== undefined) throw smtpError(451, `Too many deliveries to this mailbox, try again in ${outcome.rateLimited} seconds`);
  if (outcome.tooLarge && stored.length === 0) throw smtpError(552, 'Message too large for this mailbox');
  if (stored.length === 0) throw smtpError(550, 'No such mailbox here (deleted or expired)');
  return stored.length === 1 ? `OK: stored as ${stored[0]}` : `OK: stored as ${stored.length} events`;
}
