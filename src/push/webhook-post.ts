// One delivery attempt (design.md, "Push subscriptions"): the Event JSON POSTed to the subscription's
// URL, signed with Standard Webhooks (the standardwebhooks package: webhook-id = the event id,
// webhook-timestamp, webhook-signature v1,<base64 HMAC-SHA256>). node:http(s), one connection per
// attempt, its DNS lookup guarded (target-guard.ts); no redirect is followed (a 3xx is a failure);
// the whole attempt, answer included, is bounded by timeoutMs. The answer's body is read and dropped.
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
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
  return new Promise((resolve) => {
    let settled = false;
    const finish = (o: AttemptOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(o);
    };
    const req = client.request(
      url,
      {
        method: 'POST',
        headers: {
          ...a.headers,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(a.body)),
          'user-agent': 'return-address-webhooks/1',
          'webhook-id': a.messageId,
          'webhook-timestamp': String(at.getTime() / 1000),
          'webhook-signature': signature,
        },
        agent: false,
        ...(a.signal ? { signal: a.signal } : {}),
        lookup: guardedLookup(a.allowPrivate, a.resolve) as never,
      },
      (res) => {
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
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${a.timeoutMs} ms`)), a.timeoutMs);
    req.on('error', (err: NodeJS.ErrnoException) => {
      const refused = err instanceof TargetRefused || err.code === 'ETARGETREFUSED';
      finish({ status: null, error: refused ? err.message : (err.code ?? err.message), retryAfterMs: null, abort: false, refused });
    });
    req.end(a.body);
  });
}
