// One received message -> one event per distinct live recipient (docs/design.md, "Inbound email"), each through
// ReturnAddressService.deliver like any HTTP delivery (same sequences, dedupe and wake-ups).
import type { FastifyBaseLogger } from 'fastify';
import { blobUrl } from '../blobs/event-blob.js';
import { newEventId } from '../domain/credentials.js';
import type { Delivery } from '../domain/model.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';
import type { EmailSender } from '../domain/sender-screen.js';
import { emailDataJson } from './email-blobs.js';
import { emailTrustJson } from './email-trust.js';
import { EMAIL_EVENT_SOURCE, emailEventInput, type ParsedEmail } from './mime-to-event.js';
import type { SmtpMemoryBudget } from './smtp-memory-budget.js';
import type { Recipient } from './smtp-recipients.js';
import { smtpError } from './smtp-replies.js';

/** A mail's event JSON above this many characters is stored one recipient at a time. */
const LARGE_EVENT_CHARS = 1024 * 1024;

export interface FanOutContext {
  service: ReturnAddressService;
  budget: SmtpMemoryBudget;
  log: FastifyBaseLogger;
  sessionId: string;
  mailFrom: string;
  remoteIp: string;
  /** Bytes of the raw message this session already holds against the budget. */
  rawBytes: number;
  /** BASE_URL: the urls of bytes stored beside an event (docs/design.md, "Bounded work"). */
  baseUrl: string;
  now: () => number;
}

/** The recipients' distinct addresses: two recipients naming one address (slug+a, slug+b) give it one event, as a Message-ID would. */
export async function distinctTargets(
  rcpts: readonly string[],
  resolve: (rcpt: string) => Promise<Recipient | null>,
): Promise<{ recipient: Recipient; rcpt: string }[]> {
  const targets = new Map<string, { recipient: Recipient; rcpt: string }>();
  for (const rcpt of rcpts) {
    // Re-checked: an address may have been deleted or expired since RCPT TO.
    const recipient = await resolve(rcpt);
    if (recipient && !targets.has(recipient.address.id)) targets.set(recipient.address.id, { recipient, rcpt });
  }
  return [...targets.values()];
}

export async function fanOut(
  parsed: ParsedEmail,
  targets: readonly { recipient: Recipient; rcpt: string }[],
  ctx: FanOutContext,
): Promise<PromiseSettledResult<Delivery>[]> {
  // The event's JSON is built once and shared by every recipient's event: a mail to 100 addresses
  // holds one copy, not 100. That text (up to ~6x the message, for escaped control bytes) counts
  // against SMTP_MAX_BUFFERED_BYTES with the raw bytes while it is held, and a large one is stored
  // one recipient at a time, so the stores' own copies of it are never more than one either.
  const dataJson = emailDataJson(parsed);
  // Refused only while other messages hold bytes too: alone, a message always gets through, so an
  // MTA's retry cannot be refused forever by a budget smaller than one message's JSON.
  const othersHold = ctx.budget.held > ctx.rawBytes;
  if (othersHold && !ctx.budget.tryTake(dataJson.length)) {
    ctx.log.warn({ session: ctx.sessionId, buffered: ctx.budget.held, json: dataJson.length }, 'email refused for now: too many message bytes in memory');
    throw smtpError(452, 'Insufficient system storage, try again later');
  }
  if (!othersHold) ctx.budget.take(dataJson.length);
  // What the mail proved about its sender, judged against each recipient address's sender policy.
  const sender: EmailSender = {
    ingress: 'email',
    from: parsed.data.from?.address ?? null,
    dmarc: parsed.data.authentication?.dmarc ?? 'none',
    dkimPassDomains: parsed.dkimPassDomains ?? [],
  };
  // The sender as DMARC proved it (or not): the same for every recipient's copy.
  const trust = emailTrustJson(parsed.data);
  const deliverTo = ({ recipient, rcpt }: { recipient: Recipient; rcpt: string }) => {
    const input = { ...emailEventInput(parsed.data, { mailFrom: ctx.mailFrom, rcptTo: rcpt, remoteIp: ctx.remoteIp, tag: recipient.tag }), sender };
    // Every mail keeps its raw message beside its event (email-blobs.ts). Blobs are named by url,
    // which holds the address and the event id: one JSON per recipient (the shared text joined
    // around its urls), the bytes shared.
    const id = newEventId(ctx.now());
    const own = dataJson.render((name) => blobUrl(ctx.baseUrl, recipient.address.id, id, name));
    return ctx.service.deliver(
      recipient.address,
      { ...input, data: undefined, dataJson: own, id, blobs: parsed.blobs },
      undefined,
      EMAIL_EVENT_SOURCE,
      'email',
      trust,
    );
  };
  try {
    if (dataJson.length <= LARGE_EVENT_CHARS) return await Promise.allSettled(targets.map(deliverTo));
    const results: PromiseSettledResult<Delivery>[] = [];
    for (const target of targets) results.push(...(await Promise.allSettled([deliverTo(target)])));
    return results;
  } finally {
    ctx.budget.release(dataJson.length);
  }
}
