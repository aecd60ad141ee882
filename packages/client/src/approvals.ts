// ask(): a question to a person, as an approval whose answer is waited for.
import type { AskOptions, AskResult, LoopClient } from './types.js';

/**
 * Asks a person: creates an approval, hands its URL to `onUrl` (send it through your own channel),
 * then waits for the approval's first event (approval.decided, .expired or .cancelled, matched on
 * data.approval_id) and returns it. The event stays unacknowledged: ack it once acted upon.
 */
export async function ask(ra: LoopClient, question: string, opts: AskOptions = {}): Promise<AskResult> {
  const approval = await ra.createApproval({
    question,
    ...(opts.details !== undefined ? { details: opts.details } : {}),
    ...(opts.options !== undefined ? { options: opts.options } : {}),
    ...(opts.fields !== undefined ? { fields: opts.fields } : {}),
    ...(opts.expiresIn !== undefined ? { expires_in_seconds: opts.expiresIn } : {}),
  });
  await opts.onUrl?.(approval.url ?? '', approval);
  const lifetime = Math.ceil((Date.parse(approval.expires_at) - Date.now()) / 1000);
  // The expiry event comes within the server's sweep interval after expires_at: wait a minute past it.
  const timeout = opts.timeout ?? lifetime + 60;
  // trust.verified: only the service's own approval events (an answer, an expiry, a cancel) count,
  // never an inbox delivery that copies their data.
  const { event } = await ra.waitFor({ match: { 'trust.verified': true, 'data.approval_id': approval.id }, timeout, signal: opts.signal });
  return { approval, event };
}
