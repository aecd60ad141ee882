// data.signature of a captured request (design.md, "Capture URL"): which scheme signed it, judged by its
// headers, and whether the signature holds under the secret the address's reader set for that scheme.
// Each scheme follows its provider's documented algorithm; comparisons take constant time. A bad
// signature is recorded, never refused: the agent decides what an unverified event is worth.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { SigningScheme } from '../domain/signing-schemes.js';
import type { SigningSecretSet } from '../domain/signing-secrets.js';

export interface SignatureCheck {
  scheme: SigningScheme | null;
  /** null: no signature was sent, or no secret is set for its scheme. */
  verified: boolean | null;
  reason: string;
  /**
   * Present (true) only when the signature matches under the secret and its timestamp alone is
   * outside the tolerance: the sender is proven, the moment is not (`forward --resign` may sign it again).
   */
  stale?: true;
}

/** Stripe's and Slack's documented tolerance between a signature's timestamp and now. */
export const TIMESTAMP_TOLERANCE_SECONDS = 300;

/** The scheme whose signature header the request carries, if any. */
export function signatureScheme(h: Record<string, string>): SigningScheme | null {
  if (h['x-hub-signature-256'] !== undefined) return 'github';
  if (h['stripe-signature'] !== undefined) return 'stripe';
  if (h['x-slack-signature'] !== undefined) return 'slack';
  if (h['webhook-signature'] !== undefined || h['svix-signature'] !== undefined) return 'standard_webhooks';
  return null;
}

/** The lower-case hex HMAC-SHA256 of `signed` under `secret`, as bytes to compare against. */
function hexHmac(secret: string, signed: Buffer[]): Buffer {
  const hmac = createHmac('sha256', secret);
  for (const part of signed) hmac.update(part);
  return Buffer.from(hmac.digest('hex'));
}

/** Whether `given` equals the expected hex digest, in constant time. */
function hexEquals(expected: Buffer, given: string): boolean {
  const actual = Buffer.from(given.toLowerCase());
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** Whether the lower-case hex HMAC-SHA256 of `signed` under `secret` equals `given`, in constant time. */
function hexHmacMatches(secret: string, signed: Buffer[], given: string): boolean {
  return hexEquals(hexHmac(secret, signed), given);
}

/**
 * Signatures of one Stripe-Signature header that are compared. Stripe sends one v1 per active
 * secret (two while a secret is rolled); more are a sender's noise, and each costs a comparison.
 */
export const MAX_SIGNATURE_CANDIDATES = 16;

const verdict = (scheme: SigningScheme, verified: boolean, reason: string): SignatureCheck => ({ scheme, verified, reason });

const STALE_TIMESTAMP = `the signature timestamp is more than ${TIMESTAMP_TOLERANCE_SECONDS} s from this server's clock (a replay, or a stale retry)`;
const MISSING_TIMESTAMP = 'the signature timestamp is missing or not a number';

/** A Unix-seconds timestamp within the tolerance of `nowMs`, or the reason it is not. */
function timestampProblem(value: string | undefined, nowMs: number): string | null {
  if (value === undefined || !/^\d{1,12}$/.test(value)) return MISSING_TIMESTAMP;
  return Math.abs(nowMs / 1000 - Number(value)) > TIMESTAMP_TOLERANCE_SECONDS ? STALE_TIMESTAMP : null;
}

/** A signature that matched under a timestamp outside the tolerance: not verified, but marked stale. */
const staleVerdict = (scheme: SigningScheme, reason: string): SignatureCheck => ({
  scheme,
  verified: false,
  reason: `${reason}; the signature itself matches`,
  stale: true,
});

function github(secret: string, h: Record<string, string>, raw: Buffer): SignatureCheck {
  const m = /^sha256=([0-9a-fA-F]{64})$/.exec(h['x-hub-signature-256']!.trim());
  if (!m) return verdict('github', false, 'X-Hub-Signature-256 is not of the form sha256=<64 hex digits>');
  return hexHmacMatches(secret, [raw], m[1]!)
    ? verdict('github', true, 'X-Hub-Signature-256 matches the HMAC-SHA256 of the body')
    : verdict('github', false, 'X-Hub-Signature-256 does not match the HMAC-SHA256 of the body under the github secret');
}

/** Stripe-Signature: "t=<unix>,v1=<hex>[,v1=<hex>…]"; the signed text is "<t>.<body>". */
function stripe(secret: string, h: Record<string, string>, raw: Buffer, nowMs: number): SignatureCheck {
  let t: string | undefined;
  const v1: string[] = [];
  let ignored = 0;
  for (const item of h['stripe-signature']!.split(',')) {
    const [k, v] = item.trim().split('=', 2);
    if (k === 't') t = v;
    else if (k === 'v1' && v) {
      if (v1.length < MAX_SIGNATURE_CANDIDATES) v1.push(v);
      else ignored++;
    }
  }
  if (v1.length === 0) return verdict('stripe', false, 'Stripe-Signature holds no v1 signature');
  const problem = timestampProblem(t, nowMs);
  if (problem === MISSING_TIMESTAMP) return verdict('stripe', false, problem);
  // The body is hashed once, whatever the number of candidates: hashing it per v1 entry let one
  // request of 3,000 entries over 25 MiB hold the event loop for a minute.
  const expected = hexHmac(secret, [Buffer.from(`${t}.`), raw]);
  const matches = v1.some((s) => hexEquals(expected, s));
  if (problem) return matches ? staleVerdict('stripe', problem) : verdict('stripe', false, problem);
  if (matches) return verdict('stripe', true, 'a v1 signature of Stripe-Signature matches');
  return ignored > 0
    ? verdict(
        'stripe',
        false,
        `no v1 signature among the first ${MAX_SIGNATURE_CANDIDATES} of Stripe-Signature matches under the stripe secret (${ignored} more were not compared)`,
      )
    : verdict('stripe', false, 'no v1 signature of Stripe-Signature matches under the stripe secret');
}

/** X-Slack-Signature: "v0=<hex>" of "v0:<X-Slack-Request-Timestamp>:<body>". */
function slack(secret: string, h: Record<string, string>, raw: Buffer, nowMs: number): SignatureCheck {
  const ts = h['x-slack-request-timestamp'];
  const problem = timestampProblem(ts, nowMs);
  if (problem === MISSING_TIMESTAMP) return verdict('slack', false, problem);
  const m = /^v0=([0-9a-fA-F]{64})$/.exec(h['x-slack-signature']!.trim());
  if (!m) return verdict('slack', false, problem ?? 'X-Slack-Signature is not of the form v0=<64 hex digits>');
  const matches = hexHmacMatches(secret, [Buffer.from(`v0:${ts}:`), raw], m[1]!);
  if (problem) return matches ? staleVerdict('slack', problem) : verdict('slack', false, problem);
  return matches ? verdict('slack', true, 'X-Slack-Signature matches') : verdict('slack', false, 'X-Slack-Signature does not match under the slack secret');
}

/** Standard Webhooks (and Svix, the same scheme under svix-* headers), checked by the standardwebhooks package. */
function standardWebhooks(secret: string, h: Record<string, string>, raw: Buffer): SignatureCheck {
  const headers = {
    'webhook-id': h['webhook-id'] ?? h['svix-id'] ?? '',
    'webhook-timestamp': h['webhook-timestamp'] ?? h['svix-timestamp'] ?? '',
    'webhook-signature': h['webhook-signature'] ?? h['svix-signature'] ?? '',
  };
  const wh = new Webhook(secret);
  try {
    wh.verify(raw, headers, { jsonParse: false });
    return verdict('standard_webhooks', true, 'a v1 signature of webhook-signature matches');
  } catch (err) {
    const reason = `standardwebhooks: ${(err as Error).message}`;
    return /timestamp too (old|new)/.test(reason) && signedAtAnyTime(wh, headers, raw)
      ? staleVerdict('standard_webhooks', reason)
      : verdict('standard_webhooks', false, reason);
  }
}

/** Whether a v1 signature of the headers matches under the secret, whatever the timestamp's age. */
function signedAtAnyTime(wh: Webhook, headers: Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string>, raw: Buffer): boolean {
  const ts = headers['webhook-timestamp'];
  if (!/^\d{1,12}$/.test(ts)) return false;
  const expected = Buffer.from(wh.sign(headers['webhook-id'], new Date(Number(ts) * 1000), raw).split(',')[1] ?? '');
  return headers['webhook-signature']
    .split(' ')
    .slice(0, MAX_SIGNATURE_CANDIDATES)
    .some((candidate) => {
      const [version, signature] = candidate.split(',', 2);
      const given = Buffer.from(signature ?? '');
      return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
    });
}

export function checkSignature(h: Record<string, string>, raw: Buffer, secrets: SigningSecretSet, nowMs: number): SignatureCheck {
  const scheme = signatureScheme(h);
  if (scheme === null) return { scheme: null, verified: null, reason: 'the request carries no signature header this service knows' };
  const secret = secrets[scheme];
  if (secret === undefined) {
    return { scheme, verified: null, reason: `no ${scheme} signing secret is set: PUT /api/v1/addresses/{id}/signing-secrets` };
  }
  switch (scheme) {
    case 'github':
      return github(secret, h, raw);
    case 'stripe':
      return stripe(secret, h, raw, nowMs);
    case 'slack':
      return slack(secret, h, raw, nowMs);
    case 'standard_webhooks':
      return standardWebhooks(secret, h, raw);
  }
}

/** Whether `secret` can be a standard_webhooks secret ("whsec_" then base64, or base64). */
export function isStandardWebhooksSecret(secret: string): boolean {
  try {
    new Webhook(secret);
    return true;
  } catch {
    return false;
  }
}
