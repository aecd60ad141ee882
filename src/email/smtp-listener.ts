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
//
// This file is the wiring only; each job has its own file: recipients (smtp-recipients.ts), the
// per-client connection cap (smtp-connection-limits.ts), the memory budget (smtp-memory-budget.ts),
// reading the message (mail-reading.ts), one event per recipient (smtp-fan-out.ts) and the SMTP
// answer (smtp-replies.ts).
import type { AddressInfo } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerError, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server';
import type { BlockList } from '../abuse/block-list.js';
import type { ClientDeliveryLimit } from '../abuse/client-delivery-limit.js';
import { clientKey } from '../domain/client-key.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';
import { MailParseLimitError, MailParsePool } from './mail-parse-pool.js';
import { type MailReader, pooledMailReader } from './mail-reading.js';
import type { DnsResolver } from './sender-authentication.js';
import { loadSmtpCertificates, type SmtpCertificates } from './smtp-certificates.js';
import { DEFAULT_MAX_CONNECTIONS_PER_IP, SmtpConnectionLimits } from './smtp-connection-limits.js';
import { distinctTargets, fanOut } from './smtp-fan-out.js';
import { DEFAULT_MAX_BUFFERED_BYTES, SmtpMemoryBudget } from './smtp-memory-budget.js';
import { recipientResolver } from './smtp-recipients.js';
import { deliveryOutcome, replyFor, smtpError } from './smtp-replies.js';

export { DEFAULT_MAX_CONNECTIONS_PER_IP } from './smtp-connection-limits.js';
export { parseRecipient } from './smtp-recipients.js';

export interface SmtpListenerOptions {
  /** BLOCK_CIDRS: a peer in it is refused at connect (550). */
  blockList?: BlockList | undefined;
  /** DELIVERY_RATE_LIMIT_PER_IP: each accepted recipient counts one delivery from the peer; over it, 451 at RCPT TO. */
  deliveryLimit?: ClientDeliveryLimit | undefined;
  port: number;
  host: string;
  emailDomain: string;
  maxEmailBytes: number;
  /** BASE_URL: the urls of bytes stored beside an event (docs/design.md, "Bounded work"). */
  baseUrl: string;
  /** MAX_EVENT_BYTES: an event's stored JSON stays within it; larger attachments and bodies are stored beside it. */
  maxEventBytes: number;
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
  /** Worker threads that parse mail (MAIL_PARSE_WORKERS), their time budget and heap (mail-parse-pool.ts). */
  mailParseWorkers?: number | undefined;
  mailParseTimeoutMs?: number | undefined;
  mailParseMaxHeapMb?: number | undefined;
  /** The per-IP connection cap counts an IPv6 client by this prefix (IPV6_PREFIX_BITS, default 64). */
  ipv6PrefixBits?: number | undefined;
}

export interface SmtpListener {
  /** The port actually bound (differs from the option when that was 0). */
  readonly port: number;
  close(): Promise<void>;
  /**
   * Reads SMTP_TLS_CERT/KEY again and uses them for the STARTTLS handshakes from now on; the
   * listener and the sessions already open stay. Throws (keeping the certificate in use) when the
   * new pair does not load, or when STARTTLS is off.
   */
  reloadTls(): SmtpCertificates['summary'];
}

const DEFAULT_SOCKET_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_CLIENTS = 500;
const DEFAULT_MAX_RECIPIENTS = 100;
/** Ceiling on how long shutdown waits for clients that do not leave by themselves. */
const CLOSE_TIMEOUT_MS = 10_000;

export async function startSmtpListener(service: ReturnAddressService, opts: SmtpListenerOptions, log: FastifyBaseLogger): Promise<SmtpListener> {
  const inFlight = new Set<Promise<unknown>>();
  let closing = false;
  const budget = new SmtpMemoryBudget(opts.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES);
  const connections = new SmtpConnectionLimits(opts.maxConnectionsPerIp ?? DEFAULT_MAX_CONNECTIONS_PER_IP, (ip) => clientKey(ip, opts.ipv6PrefixBits));
  const resolve = recipientResolver(service, opts.emailDomain, opts.now ?? Date.now);
  // Untrusted mail is read in worker threads with a heap and a time budget, never on this event loop.
  const pool = new MailParsePool(
    { workers: opts.mailParseWorkers, timeoutMs: opts.mailParseTimeoutMs, maxHeapMb: opts.mailParseMaxHeapMb, dnsResolver: opts.dnsResolver },
    log,
  );
  const now = opts.now ?? Date.now;
  const readMail: MailReader = pooledMailReader(pool, {
    // Attachments inline while the event fits in MAX_EVENT_BYTES; beyond, they (and if need be the
    // whole message) are stored beside the event (mime-to-event.ts, blobs/event-blob.ts).
    limits: { inlineAttachmentBytes: opts.maxEventBytes, maxEventBytes: opts.maxEventBytes },
    lookupTimeoutMs: opts.dnsLookupTimeoutMs,
    authenticationBudgetMs: opts.authenticationBudgetMs,
    onProblem: (what, err) => log.warn({ err }, what === 'parse' ? 'email stored unparsed' : 'sender authentication failed'),
  });

  /** Delivers a complete message; resolves to the 250 text, or throws an SMTP error. */
  async function deliverMessage(raw: Buffer, mailFrom: string, rcpts: readonly string[], remoteIp: string, helo: string, sessionId: string): Promise<string> {
    const parsed = await readMail(raw, {
      ip: remoteIp.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, ''),
      helo: helo === '' ? undefined : helo,
      sender: mailFrom,
      mta: opts.emailDomain,
    });
    const targets = await distinctTargets(rcpts, resolve);
    const results = await fanOut(parsed, targets, {
      service,
      budget,
      log,
      sessionId,
      mailFrom,
      remoteIp,
      rawBytes: raw.byteLength,
      baseUrl: opts.baseUrl,
      now,
    });
    const { data } = parsed;
    const outcome = deliveryOutcome(results);
    for (const err of outcome.transientErrors) log.error({ err, session: sessionId }, 'storing an email event failed');
    log.info(
      {
        session: sessionId,
        remote_ip: remoteIp,
        bytes: raw.byteLength,
        events: outcome.stored,
        duplicates: outcome.duplicates,
        parse_error: data.parse_error ?? undefined,
        authentication: data.authentication?.summary,
      },
      'email received',
    );
    return replyFor(outcome);
  }

  const certificates = opts.tlsCertFile !== undefined && opts.tlsKeyFile !== undefined ? loadSmtpCertificates(opts.tlsCertFile, opts.tlsKeyFile) : undefined;
  const tls = certificates ? { cert: certificates.cert, key: certificates.key } : undefined;

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
      if (opts.blockList?.has(session.remoteAddress)) {
        service.observer.mailRefused('blocked');
        return callback(smtpError(550, "Mail from your network is blocked by this service's operator"));
      }
      const { admitted, held } = connections.admit(session.id, session.remoteAddress);
      if (!admitted) {
        log.warn({ remote_ip: session.remoteAddress, held }, 'smtp connection refused: too many from this address');
        return callback(smtpError(421, 'Too many connections from your address, try again later'));
      }
      callback();
    },

    onClose(session) {
      connections.release(session.id);
    },

    onRcptTo(address, session, callback) {
      resolve(address.address)
        .then(async (recipient) => {
          if (!recipient) {
            service.observer.smtp('rcpt', 550);
            service.observer.mailRefused('not_found');
            return callback(smtpError(550, `No such mailbox here: <${address.address}>`));
          }
          const wait = await opts.deliveryLimit?.take(session.remoteAddress);
          if (wait !== undefined) {
            service.observer.smtp('rcpt', 451);
            service.observer.mailRefused('rate_limited');
            return callback(smtpError(451, opts.deliveryLimit!.message(wait)));
          }
          service.observer.smtp('rcpt', 250);
          callback(null);
        })
        .catch((err: unknown) => {
          log.error({ err }, 'looking up an email recipient failed');
          service.observer.smtp('rcpt', 451);
          service.observer.mailRefused('unavailable');
          callback(smtpError(451, 'Temporary failure looking up the recipient, try again later'));
        });
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
        budget.release(held);
        held = 0;
        chunks.length = 0;
      };
      stream.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        // Past the limit the rest is drained, not kept: the message is refused whole.
        if (bytes > opts.maxEmailBytes || overBudget) return;
        if (!budget.tryTake(chunk.length)) {
          overBudget = true;
          release();
          return;
        }
        chunks.push(chunk);
        held += chunk.length;
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
          // Refused before any recipient's delivery began: counted here, once per message.
          service.observer.smtp('data', 552);
          service.observer.delivery('email', 'too_large');
          callback(smtpError(552, `Message exceeds the maximum size of ${opts.maxEmailBytes} bytes`));
          return;
        }
        if (overBudget) {
          log.warn({ session: session.id, buffered: budget.held }, 'email refused for now: too many message bytes in memory');
          service.observer.smtp('data', 452);
          service.observer.mailRefused('unavailable');
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
          (reply) => {
            service.observer.smtp('data', 250);
            callback(null, reply);
          },
          (err: unknown) => {
            if (err instanceof MailParseLimitError) {
              // Every parser stayed busy (or the service is stopping): the message is not the problem, the sender retries.
              log.warn({ err, session: session.id }, 'email refused for now: no mail parser free');
              service.observer.smtp('data', 451);
              service.observer.mailRefused('unavailable');
              callback(smtpError(451, 'Too much mail being processed, try again later'));
            } else if (typeof (err as SMTPServerError).responseCode === 'number') {
              service.observer.smtp('data', (err as SMTPServerError).responseCode as number);
              callback(err as SMTPServerError);
            } else {
              log.error({ err, session: session.id }, 'processing an email failed');
              service.observer.smtp('data', 451);
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
  log.info({ port, host: opts.host, starttls: tls !== undefined, certificate: certificates?.summary, max_bytes: opts.maxEmailBytes }, 'smtp listener started');

  let closed: Promise<void> | undefined;
  return {
    port,
    reloadTls: () => {
      if (opts.tlsCertFile === undefined || opts.tlsKeyFile === undefined) {
        throw new Error('STARTTLS is off (SMTP_TLS_CERT and SMTP_TLS_KEY are unset): there is no certificate to reload');
      }
      const next = loadSmtpCertificates(opts.tlsCertFile, opts.tlsKeyFile);
      // smtp-server merges these into its options and rebuilds the context each STARTTLS uses.
      server.updateSecureContext({ cert: next.cert, key: next.key });
      log.info({ certificate: next.summary }, 'SMTP TLS certificate reloaded');
      return next.summary;
    },
    close: () =>
      (closed ??= (async () => {
        closing = true;
        const stopped = new Promise<void>((r) => server.close(() => r()));
        // Let messages already being stored finish, so their senders get their 250.
        await Promise.allSettled([...inFlight]);
        for (const connection of server.connections) {
          connection.send(421, 'Service shutting down, try again later');
          connection.close();
        }
        await stopped;
        await pool.close();
      })()),
  };
}
