// The Events extension's endpoint verification for webhook mode (design.md, "MCP, current
// revision"): before an MCP subscription is stored, the callback URL must prove it wants the
// deliveries, so nobody can point a subscription at a victim's URL and flood it. The server POSTs
// the control body {"type":"verification","challenge":"<nonce>"}, signed with the subscription's
// secret exactly as a delivery (Standard Webhooks, webhook-id msg_verification_<random>,
// X-MCP-Subscription-Id), over the push room's guarded path (target-guard.ts: every resolved
// address checked inside the connection's lookup, no redirect followed, bounded in time); the
// endpoint answers 2xx with {"challenge": "<the same nonce>"}, compared in constant time. A failure
// is -32015 CallbackEndpointError with data.reason one of the draft's categories, never the
// endpoint's own words (no response oracle for URLs the caller chose).
// A success is remembered per (address, URL) for VERIFIED_FOR_MS in this instance; a stored MCP
// subscription to the URL is proof too (it exists only because a handshake succeeded), which is
// what carries verification across restarts and instances. At most HANDSHAKES_PER_ORIGIN
// handshakes per minute go to one origin (scheme, host, port), whoever asks.
// REST subscriptions (POST …/subscriptions) are not challenged: their caller owns the address and
// chose the URL through the HTTP API, as before.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { PushConfig } from '../config.js';
import { guardedLookup, hostOf, isPublicAddress, type Resolve } from '../push/target-guard.js';
import { MCP_SUBSCRIPTION_HEADER } from '../push/webhook-body.js';
import { EventsError } from './events-extension.js';
import { CALLBACK_ENDPOINT_ERROR, WEBHOOK_RESOURCE_EXHAUSTED } from './webhook-errors.js';

/** The draft's failure categories (deliveryStatus.lastError and data.reason). */
export type CallbackFailure = 'connection_refused' | 'timeout' | 'tls_error' | 'http_4xx' | 'http_5xx' | 'challenge_failed';

/** How long one successful handshake covers the same address and URL in this instance. */
export const VERIFIED_FOR_MS = 3600_000;
/** Handshakes per minute to one origin, from this instance. */
export const HANDSHAKES_PER_ORIGIN = 20;
/** The answer's body read at most (a {"challenge": …} is tiny). */
const MAX_ANSWER_BYTES = 4096;

const TLS_CODES = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|EPROTO$|ERR_OSSL_)/;

/** A connection error's category. */
export function failureOf(code: string | undefined, timedOut: boolean): CallbackFailure {
  if (timedOut) return 'timeout';
  if (code !== undefined && TLS_CODES.test(code)) return 'tls_error';
  if (code === 'ETIMEDOUT' || code === 'ESOCKETTIMEDOUT') return 'timeout';
  return 'connection_refused';
}

/** A status that is not a 2xx, as its category; a 3xx (not followed) is no echo, so challenge_failed. */
export function statusFailure(status: number): CallbackFailure {
  if (status >= 500) return 'http_5xx';
  if (status >= 400) return 'http_4xx';
  return 'challenge_failed';
}

export interface Handshake {
  addressId: string;
  subscriptionId: string;
  url: string;
  secret: string;
}

export class CallbackVerifier {
  private readonly verified = new Map<string, number>();
  private readonly window = new Map<string, { start: number; count: number }>();
  /** Handshakes under way, by (address, URL): concurrent subscribes to one URL share one POST. */
  private readonly inflight = new Map<string, Promise<void>>();

  constructor(
    private readonly config: Pick<PushConfig, 'timeoutMs' | 'allowPrivate'>,
    private readonly resolve: Resolve,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether (address, URL) passed a handshake here within VERIFIED_FOR_MS. */
  isVerified(addressId: string, url: string): boolean {
    const until = this.verified.get(`${addressId}\n${url}`);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.verified.delete(`${addressId}\n${url}`);
    return false;
  }

  /** Runs the handshake; resolves when the endpoint echoed the challenge, throws -32015 (or -32013 past the per-origin bound) otherwise. */
  verify(h: Handshake): Promise<void> {
    const key = `${h.addressId}\n${h.url}`;
    const running = this.inflight.get(key);
    if (running !== undefined) return running;
    const p = this.handshake(h).finally(() => this.inflight.delete(key));
    this.inflight.set(key, p);
    return p;
  }

  private async handshake(h: Handshake): Promise<void> {
    this.take(new URL(h.url).origin);
    const challenge = randomBytes(24).toString('base64url');
    const failure = await this.post(h, challenge);
    if (failure !== null) {
      throw new EventsError(
        CALLBACK_ENDPOINT_ERROR,
        `CallbackEndpointError: params.delivery.url did not pass verification (${failure}). Before a subscription starts, the URL gets a signed ` +
          'POST {"type":"verification","challenge":"…"} and must answer 2xx with the JSON {"challenge": the same value}.',
        { reason: failure },
      );
    }
    if (this.verified.size > 10_000) this.prune();
    this.verified.set(`${h.addressId}\n${h.url}`, this.now() + VERIFIED_FOR_MS);
  }

  private take(origin: string): void {
    const now = this.now();
    const w = this.window.get(origin);
    if (w === undefined || now - w.start >= 60_000) {
      if (this.window.size > 10_000) this.window.clear();
      this.window.set(origin, { start: now, count: 1 });
      return;
    }
    if (w.count >= HANDSHAKES_PER_ORIGIN) {
      throw new EventsError(
        WEBHOOK_RESOURCE_EXHAUSTED,
        `ResourceExhausted: at most ${HANDSHAKES_PER_ORIGIN} verification handshakes per minute go to one callback origin; try again in a minute.`,
        { limit: 'callbackVerifications', max: HANDSHAKES_PER_ORIGIN },
      );
    }
    w.count++;
  }

  private prune(): void {
    const now = this.now();
    for (const [k, until] of this.verified) if (until <= now) this.verified.delete(k);
  }

  /** One signed POST of the verification body; null when the answer echoed the challenge, else why not. */
  private post(h: Handshake, challenge: string): Promise<CallbackFailure | null> {
    const url = new URL(h.url);
    const host = hostOf(url);
    if (isIP(host) && !this.config.allowPrivate && !isPublicAddress(host)) return Promise.resolve('connection_refused');
    const body = JSON.stringify({ type: 'verification', challenge });
    const messageId = `msg_verification_${randomBytes(12).toString('hex')}`;
    const at = new Date(Math.floor(this.now() / 1000) * 1000);
    const signature = new Webhook(h.secret).sign(messageId, at, body);
    const client = url.protocol === 'https:' ? https : http;
    return new Promise((resolve) => {
      let settled = false;
      let timedOut = false;
      const finish = (f: CallbackFailure | null) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(f);
      };
      const req = client.request(
        url,
        {
          method: 'POST',
          headers: {
            [MCP_SUBSCRIPTION_HEADER]: h.subscriptionId,
            'content-type': 'application/json',
            'content-length': String(Buffer.byteLength(body)),
            'user-agent': 'return-address-webhooks/1',
            'webhook-id': messageId,
            'webhook-timestamp': String(at.getTime() / 1000),
            'webhook-signature': signature,
          },
          agent: false,
          lookup: guardedLookup(this.config.allowPrivate, this.resolve) as never,
        },
        (res) => {
          const status = res.statusCode ?? 0;
          const chunks: Buffer[] = [];
          let read = 0;
          res.on('data', (c: Buffer) => {
            read += c.length;
            if (read > MAX_ANSWER_BYTES) {
              res.destroy();
              finish(status >= 200 && status < 300 ? 'challenge_failed' : statusFailure(status));
            } else chunks.push(c);
          });
          res.on('end', () => {
            if (status < 200 || status >= 300) return finish(statusFailure(status));
            finish(echoes(Buffer.concat(chunks).toString('utf8'), challenge) ? null : 'challenge_failed');
          });
          // Cut off mid-answer (our timeout, or the endpoint closing): no echo came.
          const cut = () => finish(timedOut ? 'timeout' : status >= 200 && status < 300 ? 'challenge_failed' : statusFailure(status));
          res.on('error', cut);
          res.on('close', cut);
        },
      );
      const timer = setTimeout(() => {
        timedOut = true;
        req.destroy(new Error('timeout'));
      }, this.config.timeoutMs);
      req.on('error', (err: NodeJS.ErrnoException) => finish(failureOf(err.code, timedOut)));
      req.end(body);
    });
  }
}

/** Whether the answer is JSON {"challenge": the nonce}, compared in constant time. */
export function echoes(text: string, challenge: string): boolean {
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    return false;
  }
  const got = (answer as { challenge?: unknown } | null)?.challenge;
  if (typeof got !== 'string') return false;
  const a = Buffer.from(got);
  const b = Buffer.from(challenge);
  return a.length === b.length && timingSafeEqual(a, b);
}
