// The SMTP side door into the queue (design.md, "Inbound email"): smtp-server wiring around the domain service.
//
// A message's life: RCPT TO is checked against live addresses (550 otherwise); DATA is buffered up
// to MAX_EMAIL_BYTES (552 beyond); at the end of DATA the message is parsed once and delivered as
// one event per distinct address, through ReturnAddressService.deliver like any HTTP delivery (same
// sequences, dedupe and long-poll wake-ups). The 250 is sent only after every event is committed,
// so a 250 means durable. A connection that drops before the end of DATA stores nothing: events
// are only created from a complete message.
//
// Shutdown: close() stops accepting connections, refuses messages whose DATA ends from then on
// (421, the sender retries later), waits for deliveries already under way, then ends the remaining
// connections with 421. Only after that may the store close.
//
// Sender authentication (SPF, DKIM, DMARC) runs beside the parse, on the raw bytes, with the
// connection's IP, EHLO name and MAIL FROM; its DNS lookups are bounded (sender-authentication.ts),
// so a dead or slow resolver costs at most its budget and gives temperror, never a stalled session.
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerError, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server';
import { SLUG_RE } from '../domain/credentials.js';
import { ApiError } from '../domain/errors.js';
import type { AddressRecord, Delivery } from '../domain/model.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';
import { EMAIL_EVENT_SOURCE, emailEventInput, parseEmailMessage } from './mime-to-event.js';
import { authenticateSender, type DnsResolver } from './sender-authentication.js';

export interface SmtpListenerOptions {
  port: number;
  host: string;
  emailDomain: string;
  maxEmailBytes: number;
  /** Paths of a PEM certificate and key; with both, STARTTLS is offered, else plain SMTP only. */
  tlsCertFile?: string | undefined;
  tlsKeyFile?: string | undefined;
  /** Idle time allowed between two commands or two chunks of DATA. */
  socketTimeoutMs?: number;
  maxClients?: number;
  /** Connections one client IP may hold at once (SMTP_MAX_CONNECTIONS_PER_IP); more get 421. */
  maxConnectionsPerIp?: number;
  maxRecipients?: number;
  /** Message bytes held in memory by all sessions together (SMTP_MAX_BUFFERED_BYTES). */
  maxBufferedBytes?: number;
  /** Clock for expiry checks; the service's own clock by default. */
  now?: () => number;
  /** DNS for SPF, DKIM and DMARC; node's dns.promises.resolve by default (tests inject their own). */
  dnsResolver?: DnsResolver | undefined;
  /** Longest wait for one DNS answer (default 3 s). */
  dnsLookupTimeoutMs?: number | undefined;
  /** Longest time all the DNS lookups of one message may take together (default 8 s). */
  authenticationBudgetMs?: number | undefined;
}

export interface SmtpListener {
  /** The port actually bound (differs from the option when that was 0). */
  readonly port: number;
  close(): Promise<void>;
}

/** What a recipient resolves to when it names a live address. */
interface Recipient {
  address: AddressRecord;
  tag: string | undefined;
}

const DEFAULT_SOCKET_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_CLIENTS = 500;
/** Enough for an MTA's parallel deliveries; one host alone cannot take all of maxClients. */
export const DEFAULT_MAX_CONNECTIONS_PER_IP = 20;
/**
 * Default of the message bytes held in memory across all sessions at once. Each message may be
 * MAX_EMAIL_BYTES, and 500 clients of 10 MiB would be 5 GB: past this budget a message is drained,
 * not kept, and refused with 452 (try again later), which every MTA retries.
 */
const DEFAULT_MAX_BUFFERED_BYTES = 256 * 1024 * 1024;
const DEFAULT_MAX_RECIPIENTS = 100;
/** Ceiling on how long shutdown waits for clients that do not leave by themselves. */
const CLOSE_TIMEOUT_MS = 10_000;

/** `<slug>@<domain>` or `<slug>+<tag>@<domain>`, domain case-insensitive; null for anything else. */
export function parseRecipient(rcpt: string, emailDomain: string): { slug: string; tag: string | undefined } | null {
  const at = rcpt.lastIndexOf('@');
  if (at <= 0) return null;
  const domain = rcpt.slice(at + 1).replace(/\.$/, '').toLowerCase();
  if (domain !== emailDomain.toLowerCase()) return null;
  const local = rcpt.slice(0, at);
  const plus = local.indexOf('+');
  // Slugs are lower-case; a sender's MTA may have changed the case of the local part.
  const slug = (plus === -1 ? local : local.slice(0, plus)).toLowerCase();
  if (!SLUG_RE.test(slug)) return null;
  const tag = plus === -1 ? '' : local.slice(plus + 1);
  return { slug, tag: tag === '' ? undefined : tag };
}

function smtpError(responseCode: number, message: string): SMTPServerError {
  return Object.assign(new Error(message), { responseCode });
}

function readPem(path: string, variable: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new Error(`${variable}: cannot read ${path}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/** A mail's event JSON above this many characters is stored one recipient at a time. */
const LARGE_EVENT_CHARS = 1024 * 1024;

export async function startSmtpListener(service: ReturnAddressService, opts: SmtpListenerOptions, log: FastifyBaseLogger): Promise<SmtpListener> {
  const now = opts.now ?? Date.now;
  const inFlight = new Set<Promise<unknown>>();
  let closing = false;
  /** Message bytes held by all sessions right now (see DEFAULT_MAX_BUFFERED_BYTES). */
  let buffered = 0;
  const maxBuffered = opts.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
  const maxPerIp = opts.maxConnectionsPerIp ?? DEFAULT_MAX_CONNECTIONS_PER_IP;
  const connectionsByIp = new Map<string, number>();
  const counted = new Set<string>();

  /** The live address a recipient names, or null: unknown, other domain, deleted, or expired. */
  async function resolve(rcpt: string): Promise<Recipient | null> {
    const parsed = parseRecipient(rcpt, opts.emailDomain);
    if (!parsed) return null;
    const address = await service.findAddressBySlug(parsed.slug);
    if (!address || now() >= address.expiresAt) return null;
    return { address, tag: parsed.tag };
  }

  /** Delivers a complete message; resolves to the 250 text, or throws an SMTP error. */
  async function deliverMessage(raw: Buffer, mailFrom: string, rcpts: readonly string[], remoteIp: string, helo: string, sessionId: string): Promise<string> {
    const authentication = authenticateSender(raw, { ip: remoteIp.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, ''), helo: helo === '' ? undefined : helo, sender: mailFrom, mta: opts.emailDomain }, {
      resolver: opts.dnsResolver,
      lookupTimeoutMs: opts.dnsLookupTimeoutMs,
      budgetMs: opts.authenticationBudgetMs,
      onError: (err) => log.warn({ err, session: sessionId }, 'sender authentication failed'),
    });
    const data = await parseEmailMessage(raw);
    data.authentication = await authentication;
    // Recipients are re-checked: an address may have been deleted or expired since RCPT TO.
    const targets = new Map<string, { recipient: Recipient; rcpt: string }>();
    for (const rcpt of rcpts) {
      const recipient = await resolve(rcpt);
      // Two recipients naming one address (slug+a, slug+b) give it one event, as a Message-ID would.
      if (recipient && !targets.has(recipient.address.id)) targets.set(recipient.address.id, { recipient, rcpt });
    }
    // The event's JSON is built once and shared by every recipient's event: a mail to 100 addresses
    // holds one copy, not 100. That text (up to ~6x the message, for escaped control bytes) counts
    // against SMTP_MAX_BUFFERED_BYTES with the raw bytes while it is held, and a large one is stored
    // one recipient at a time, so the stores' own copies of it are never more than one either.
    const dataJson = JSON.stringify(data);
    // Refused only while other messages hold bytes too: alone, a message always gets through, so an
    // MTA's retry cannot be refused forever by a budget smaller than one message's JSON.
    const othersHold = buffered > raw.byteLength;
    if (othersHold && buffered + dataJson.length > maxBuffered) {
      log.warn({ session: sessionId, buffered, json: dataJson.length }, 'email refused for now: too many message bytes in memory');
      throw smtpError(452, 'Insufficient system storage, try again later');
    }
    buffered += dataJson.length;
    const deliverTo = ({ recipient, rcpt }: { recipient: Recipient; rcpt: string }) => {
      const input = emailEventInput(data, { mailFrom, rcptTo: rcpt, remoteIp, tag: recipient.tag });
      return service.deliver(recipient.address, { ...input, data: undefined, dataJson }, undefined, EMAIL_EVENT_SOURCE);
    };
    let results: PromiseSettledResult<Delivery>[];
    try {
      if (dataJson.length <= LARGE_EVENT_CHARS) {
        results = await Promise.allSettled([...targets.values()].map(deliverTo));
      } else {
        results = [];
        for (const target of targets.values()) results.push(...(await Promise.allSettled([deliverTo(target)])));
      }
    } finally {
      buffered -= dataJson.length;
    }

    const stored: string[] = [];
    let duplicates = 0;
    let queueFull = false;
    let tooLarge = false;
    let transient = false;
    for (const r of results) {
      if (r.status === 'fulfilled') {
        stored.push(r.value.event.id);
        if (r.value.duplicate) duplicates++;
      } else if (r.reason instanceof ApiError && r.reason.code === 'queue_full') {
        queueFull = true;
      } else if (r.reason instanceof ApiError && r.reason.code === 'payload_too_large') {
        // Larger than a whole address may hold (MAX_BYTES_PER_ADDRESS): no retry can fit it.
        tooLarge = true;
      } else if (r.reason instanceof ApiError && (r.reason.code === 'address_expired' || r.reason.code === 'not_found')) {
        // Gone since RCPT TO: nothing to retry for this recipient.
      } else {
        transient = true;
        log.error({ err: r.reason, session: sessionId }, 'storing an email event failed');
      }
    }
    log.info({ session: sessionId, remote_ip: remoteIp, bytes: raw.byteLength, events: stored, duplicates, parse_error: data.parse_error ?? undefined,
      authentication: data.authentication?.summary },
      'email received');
    // A retry re-delivers to every recipient; those already stored are deduplicated by Message-ID.
    if (queueFull) throw smtpError(452, 'Mailbox full: the address holds too many unacknowledged events, try again later');
    if (transient) throw smtpError(451, 'Temporary failure storing the message, try again later');
    if (tooLarge && stored.length === 0) throw smtpError(552, 'Message too large for this mailbox');
    if (stored.length === 0) throw smtpError(550, 'No such mailbox here (deleted or expired)');
    return stored.length === 1 ? `OK: stored as ${stored[0]}` : `OK: stored as ${stored.length} events`;
  }

  const tls = opts.tlsCertFile !== undefined && opts.tlsKeyFile !== undefined
    ? { cert: readPem(opts.tlsCertFile, 'SMTP_TLS_CERT'), key: readPem(opts.tlsKeyFile, 'SMTP_TLS_KEY') }
    : undefined;

  const options: SMTPServerOptions = {
    name: opts.emailDomain,
    banner: 'Return Address',
    secure: false,
    ...(tls ? { ...tls, minVersion: 'TLSv1.2' as const } : {}),
    disabledCommands: tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    authOptional: true,
    authMethods: [],
    size: opts.maxEmailBytes,
    rejectOversized: true,
    maxClients: opts.maxClients ?? DEFAULT_MAX_CLIENTS,
    maxRecipients: opts.maxRecipients ?? DEFAULT_MAX_RECIPIENTS,
    socketTimeout: opts.socketTimeoutMs ?? DEFAULT_SOCKET_TIMEOUT_MS,
    closeTimeout: CLOSE_TIMEOUT_MS,
    disableReverseLookup: true,
    logger: false,

    onConnect(session, callback) {
      const ip = session.remoteAddress;
      const held = connectionsByIp.get(ip) ?? 0;
      if (held >= maxPerIp) {
        log.warn({ remote_ip: ip, held }, 'smtp connection refused: too many from this address');
        return callback(smtpError(421, 'Too many connections from your address, try again later'));
      }
      connectionsByIp.set(ip, held + 1);
      counted.add(session.id);
      callback();
    },

    onClose(session) {
      // Only sessions counted at connect: a refused one was never added.
      if (!counted.delete(session.id)) return;
      const left = (connectionsByIp.get(session.remoteAddress) ?? 1) - 1;
      if (left <= 0) connectionsByIp.delete(session.remoteAddress);
      else connectionsByIp.set(session.remoteAddress, left);
    },

    onRcptTo(address, _session, callback) {
      resolve(address.address).then(
        (recipient) => callback(recipient ? null : smtpError(550, `No such mailbox here: <${address.address}>`)),
        (err: unknown) => {
          log.error({ err }, 'looking up an email recipient failed');
          callback(smtpError(451, 'Temporary failure looking up the recipient, try again later'));
        },
      );
    },

    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback) {
      // Copied now: the session's envelope is reset once the reply is sent.
      const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
      const rcpts = session.envelope.rcptTo.map((r) => r.address);
      const remoteIp = session.remoteAddress;
      const helo = session.hostNameAppearsAs ?? '';
      const chunks: Buffer[] = [];
      let bytes = 0;
      let held = 0;
      let overBudget = false;
      const release = () => {
        buffered -= held;
        held = 0;
        chunks.length = 0;
      };
      stream.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        // Past the limit the rest is drained, not kept: the message is refused whole.
        if (bytes > opts.maxEmailBytes || overBudget) return;
        if (buffered + chunk.length > maxBuffered) {
          overBudget = true;
          release();
          return;
        }
        chunks.push(chunk);
        held += chunk.length;
        buffered += chunk.length;
      });
      stream.on('error', (err) => {
        // The client went away before the end of DATA: nothing was stored and nothing will be.
        release();
        log.debug({ err, session: session.id }, 'email aborted before the end of DATA');
      });
      stream.on('close', release);
      stream.on('end', () => {
        // From here the bytes are released when the message is done with, not when the stream closes.
        stream.off('close', release);
        if (stream.sizeExceeded || bytes > opts.maxEmailBytes) {
          release();
          callback(smtpError(552, `Message exceeds the maximum size of ${opts.maxEmailBytes} bytes`));
          return;
        }
        if (overBudget) {
          log.warn({ session: session.id, buffered }, 'email refused for now: too many message bytes in memory');
          callback(smtpError(452, 'Insufficient system storage, try again later'));
          return;
        }
        if (closing) {
          release();
          callback(smtpError(421, 'Service shutting down, try again later'));
          return;
        }
        const raw = Buffer.concat(chunks, bytes);
        chunks.length = 0; // `raw` holds the bytes now; they count against the budget until stored
        const delivery = deliverMessage(raw, mailFrom, rcpts, remoteIp, helo, session.id).then(
          (reply) => callback(null, reply),
          (err: unknown) => {
            if (typeof (err as SMTPServerError).responseCode === 'number') {
              callback(err as SMTPServerError);
            } else {
              log.error({ err, session: session.id }, 'processing an email failed');
              callback(smtpError(451, 'Temporary failure processing the message, try again later'));
            }
          },
        );
        inFlight.add(delivery);
        void delivery.finally(() => {
          inFlight.delete(delivery);
          release();
        });
      });
    },
  };

  const server = new SMTPServer(options);
  server.on('error', (err: Error & { code?: string }) => {
    // Per-connection trouble (resets, TLS garbage, timeouts) lands here; none of it is fatal.
    const routine = err.code === 'ECONNRESET' || err.code === 'EPIPE' || err.code === 'ETIMEDOUT' || err.code === 'ECONNECTION';
    log[routine ? 'debug' : 'warn']({ err }, 'smtp connection error');
  });

  await new Promise<void>((resolveListen, reject) => {
    const onError = (err: Error) => reject(err);
    server.server.once('error', onError);
    server.listen(opts.port, opts.host, () => {
      server.server.off('error', onError);
      resolveListen();
    });
  });
  const port = (server.server.address() as AddressInfo).port;
  log.info({ port, host: opts.host, starttls: tls !== undefined, max_bytes: opts.maxEmailBytes }, 'smtp listener started');

  let closed: Promise<void> | undefined;
  return {
    port,
    close: () => (closed ??= (async () => {
      closing = true;
      const stopped = new Promise<void>((r) => server.close(() => r()));
      // Let messages already being stored finish, so their senders get their 250.
      await Promise.allSettled([...inFlight]);
      for (const connection of server.connections) {
        connection.send(421, 'Service shutting down, try again later');
        connection.close();
      }
      await stopped;
    })()),
  };
}
