// One delivery attempt (design.md, "Push subscriptions"): the Event JSON POSTed to the subscription's
// URL, signed with Standard Webhooks (the standardwebhooks package: webhook-id = the event id,
// webhook-timestamp, webhook-signature v1,<base64 HMAC-SHA256>). node:http(s) over kept-alive
// connections per origin (WebhookAgents), every NEW connection's DNS lookup guarded (target-guard.ts);
// no redirect is followed (a 3xx is a failure); the whole attempt, answer included, is bounded by
// timeoutMs. The answer's body is read and dropped. A reused connection that dies before any byte
// of an answer (the receiver closed it while idle: ECONNRESET, EPIPE) is retried once, at once, on a
// fresh connection: standard practice, since nothing was answered and webhook-id lets a receiver
// drop the rare duplicate. Any other failure is the attempt's outcome.
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import { Webhook } from 'standardwebhooks';
import { guardedLookup, hostOf, isPublicAddress, type Resolve, TargetRefused } from './target-guard.js';

export interface Attempt {
  url: string;
  /** whsec_…; several during a secret rotation: one signature each, space-separated in webhook-signature. */
  secret: string | readonly string[];
  /** webhook-id: the event's id, the same on every retry, so a receiver can drop a duplicate. */
  messageId: string;
  body: string;
  /** Extra request headers (MCP's X-MCP-Subscription-Id). */
  headers?: Record<string, string>;
  timeoutMs: number;
  allowPrivate: boolean;
  resolve: Resolve;
  now?: () => number;
  /** Aborts the attempt (the worker stops): it counts as no answer. */
  signal?: AbortSignal;
  /** The instance's kept-alive connections; without it, one connection for this attempt alone. */
  agents?: WebhookAgents;
}

export interface AttemptOutcome {
  /** The receiver's HTTP status, or null when no answer came. */
  status: number | null;
  /** Why no answer came (refused target, connection refused, timeout), or what the answer meant. */
  error: string | null;
  /** Retry-After of the answer, in ms, when it had one. */
  retryAfterMs: number | null;
  /** The answer said `webhook-delivery: abort`: pause now, retry nothing. */
  abort: boolean;
  /** The target was refused by the address rule: never contacted. */
  refused: boolean;
}

const MAX_RETRY_AFTER_MS = 24 * 3600 * 1000;
/** Connections per origin (scheme, host, port) at once; an attempt beyond waits for one, within its own timeout. */
export const MAX_SOCKETS_PER_ORIGIN = 8;
/**
 * An idle kept-alive connection is closed after this long (or sooner when the receiver's
 * `Keep-Alive: timeout=` says so): under the 5 s a Node server keeps one, the shortest common default,
 * so the receiver seldom closes a connection just as it is reused.
 */
export const IDLE_CONNECTION_MS = 4000;
/**
 * A kept-alive connection is closed after its answer once this long has passed since its first one,
 * so what its name resolves to now (a DNS change, a rebinding) applies within a minute even to a
 * subscription busy enough that its connection never idles.
 */
export const MAX_CONNECTION_AGE_MS = 60_000;

/** The agent keeps a connection for the next request only while it is younger than `maxAgeMs`. */
function retiring<A extends http.Agent>(agent: A, maxAgeMs: number): A {
  const since = new WeakMap<Duplex, number>();
  const keeps = agent as unknown as { keepSocketAlive(socket: Duplex): boolean };
  const keep = keeps.keepSocketAlive.bind(agent);
  keeps.keepSocketAlive = (socket) => {
    const now = Date.now();
    const first = since.get(socket);
    if (first === undefined) since.set(socket, now);
    return now - (first ?? now) < maxAgeMs && keep(socket);
  };
  return agent;
}

/**
 * The instance's kept-alive connections to receivers, one pool per origin (node:http(s) Agents,
 * keepAlive, at most MAX_SOCKETS_PER_ORIGIN each, idle ones closed after IDLE_CONNECTION_MS, any
 * closed after an answer once MAX_CONNECTION_AGE_MS passed since its first). The
 * guarded lookup is a per-request option, which the Agent hands to every connection it opens: the
 * address rule runs on each NEW connection; a reused one goes on to the address it was checked
 * against when it was opened. `destroy()` closes them all (the worker stops).
 */
export class WebhookAgents {
  private readonly http: http.Agent;
  private readonly https: https.Agent;

  constructor(maxSockets = MAX_SOCKETS_PER_ORIGIN, idleMs = IDLE_CONNECTION_MS, maxAgeMs = MAX_CONNECTION_AGE_MS) {
    const options = { keepAlive: true, maxSockets, maxFreeSockets: maxSockets, timeout: idleMs, scheduling: 'lifo' as const };
    this.http = retiring(new http.Agent(options), maxAgeMs);
    this.https = retiring(new https.Agent(options), maxAgeMs);
  }

  for(url: URL): http.Agent {
    return url.protocol === 'https:' ? this.https : this.http;
  }

  destroy(): void {
    this.http.destroy();
    this.https.destroy();
  }
}

/** How a reused connection shows it was closed under the request before any answer. */
const DEAD_SOCKET = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

/** Retry-After as seconds or an HTTP date, in ms from now; null when absent or unreadable. */
export function retryAfterMs(value: string | undefined, now: number): number | null {
  if (value === undefined) return null;
  const v = value.trim();
  if (/^\d{1,9}$/.test(v)) return Math.min(Number(v) * 1000, MAX_RETRY_AFTER_MS);
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.min(Math.max(0, at - now), MAX_RETRY_AFTER_MS);
}

export function postWebhook(a: Attempt): Promise<AttemptOutcome> {
  const now = a.now ?? Date.now;
  const url = new URL(a.url);
  const host = hostOf(url);
  // A literal address is never looked up, so node:http would skip the guarded lookup: check it here.
  if (isIP(host) && !a.allowPrivate && !isPublicAddress(host)) {
    return Promise.resolve({ status: null, error: `${host} is not a public address`, retryAfterMs: null, abort: false, refused: true });
  }
  // One instant for the signature and the header: two readings could straddle a second.
  const at = new Date(Math.floor(now() / 1000) * 1000);
  const signature = (typeof a.secret === 'string' ? [a.secret] : a.secret).map((s) => new Webhook(s).sign(a.messageId, at, a.body)).join(' ');
  const client = url.protocol === 'https:' ? https : http;
  const headers = {
    ...a.headers,
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(a.body)),
    'user-agent': 'return-address-webhooks/1',
    'webhook-id': a.messageId,
    'webhook-timestamp': String(at.getTime() / 1000),
    'webhook-signature': signature,
  };
  const lookup = guardedLookup(a.allowPrivate, a.resolve) as never;
  return new Promise((resolve) => {
    let settled = false;
    let timedOut = false;
    let current: http.ClientRequest;
    const finish = (o: AttemptOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(o);
    };
    // `pooled`: through the instance's agent (a kept-alive connection may be reused); the retry after
    // a dead reused connection is not, so it is sure to open (and check) a new one.
    const send = (pooled: boolean) => {
      let answered = false;
      const req = client.request(
        url,
        {
          method: 'POST',
          headers,
          agent: pooled && a.agents ? a.agents.for(url) : false,
          ...(a.signal ? { signal: a.signal } : {}),
          lookup,
        },
        (res) => {
          answered = true;
          const status = res.statusCode ?? 0;
          const abort = String(res.headers['webhook-delivery'] ?? '').toLowerCase() === 'abort';
          const after = retryAfterMs(res.headers['retry-after'], now());
          let read = 0;
          res.on('data', (chunk: Buffer) => {
            read += chunk.length;
            if (read > 64 * 1024) res.destroy(); // enough: the status is what counts
          });
          const done = () =>
            finish({
              status,
              error:
                status >= 200 && status < 300 ? null : status >= 300 && status < 400 ? `answered ${status}: redirects are not followed` : `answered ${status}`,
              retryAfterMs: after,
              abort,
              refused: false,
            });
          res.on('end', done);
          res.on('close', done);
          res.on('error', done);
        },
      );
      current = req;
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (settled) return;
        if (pooled && req.reusedSocket && !answered && !timedOut && !a.signal?.aborted && DEAD_SOCKET.has(err.code ?? '')) {
          send(false); // the kept-alive connection was already closed by the receiver: once more, fresh
          return;
        }
        const refused = err instanceof TargetRefused || err.code === 'ETARGETREFUSED';
        finish({ status: null, error: refused ? err.message : (err.code ?? err.message), retryAfterMs: null, abort: false, refused });
      });
      req.end(a.body);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      current.destroy(new Error(`no answer within ${a.timeoutMs} ms`));
    }, a.timeoutMs);
    send(true);
  });
}
