// `forward --resign SCHEME:SECRET` (design.md, "Forwarding to a local handler"): each replay is signed again with a local
// secret and the current time, as the provider itself would sign it, so a local handler that checks
// signatures (and their 300 s tolerance) accepts an event captured hours ago. Each scheme follows
// its provider's documented algorithm: GitHub X-Hub-Signature-256 (and the older X-Hub-Signature),
// Stripe-Signature t=,v1=, Slack v0, Standard Webhooks (and Svix, which is the same under svix-*).
import { createHmac } from 'node:crypto';
import { SIGNING_SCHEMES, type SigningScheme } from '../domain/signing-schemes.js';

/** A replay is signed again under any scheme the capture URL checks. */
export type ResignScheme = SigningScheme;

export interface Resign {
  scheme: ResignScheme;
  secret: string;
}

/** Every header a scheme's signature lives in, lower-case: the old ones are removed before signing. */
const SIGNATURE_HEADERS: Record<ResignScheme, string[]> = {
  github: ['x-hub-signature-256', 'x-hub-signature'],
  stripe: ['stripe-signature'],
  slack: ['x-slack-signature', 'x-slack-request-timestamp'],
  standard_webhooks: ['webhook-signature', 'webhook-timestamp', 'svix-signature', 'svix-timestamp'],
};

/** "github:SECRET" → {scheme, secret}; the secret may itself hold colons. */
export function parseResign(value: string): Resign {
  const colon = value.indexOf(':');
  const scheme = colon === -1 ? value : value.slice(0, colon);
  const secret = colon === -1 ? '' : value.slice(colon + 1);
  if (!(SIGNING_SCHEMES as readonly string[]).includes(scheme)) {
    throw new Error(`--resign must be SCHEME:SECRET with SCHEME one of ${SIGNING_SCHEMES.join(', ')}; got "${scheme}"`);
  }
  if (secret === '') throw new Error(`--resign ${scheme}: the secret after "${scheme}:" is empty`);
  if (scheme === 'standard_webhooks') standardWebhooksKey(secret);
  return { scheme: scheme as ResignScheme, secret };
}

/** A Standard Webhooks secret's key bytes: "whsec_" then base64 (the prefix is optional). */
function standardWebhooksKey(secret: string): Buffer {
  const b64 = secret.startsWith('whsec_') ? secret.slice(6) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) throw new Error('--resign standard_webhooks: the secret must be whsec_ followed by base64');
  return Buffer.from(b64, 'base64');
}

const hex = (key: string | Buffer, ...parts: (string | Buffer)[]) => {
  const h = createHmac('sha256', key);
  for (const p of parts) h.update(p);
  return h.digest('hex');
};

/**
 * `headers` (lower-case names) with the scheme's signature headers replaced by a fresh signature of
 * `body` at `nowMs`. `messageId` names the message for Standard Webhooks (its webhook-id).
 */
export function resignHeaders(resign: Resign, headers: Record<string, string>, body: Buffer, nowMs: number, messageId: string): Record<string, string> {
  const out: Record<string, string> = { ...headers };
  const hadSvix = headers['svix-signature'] !== undefined || headers['svix-id'] !== undefined;
  for (const h of SIGNATURE_HEADERS[resign.scheme]) delete out[h];
  const t = String(Math.floor(nowMs / 1000));
  switch (resign.scheme) {
    case 'github':
      out['x-hub-signature-256'] = `sha256=${hex(resign.secret, body)}`;
      out['x-hub-signature'] = `sha1=${createHmac('sha1', resign.secret).update(body).digest('hex')}`;
      break;
    case 'stripe':
      out['stripe-signature'] = `t=${t},v1=${hex(resign.secret, `${t}.`, body)}`;
      break;
    case 'slack':
      out['x-slack-request-timestamp'] = t;
      out['x-slack-signature'] = `v0=${hex(resign.secret, `v0:${t}:`, body)}`;
      break;
    case 'standard_webhooks': {
      const id = headers['webhook-id'] ?? headers['svix-id'] ?? messageId;
      // Over the bytes themselves: the standardwebhooks package's sign() would turn a body that is
      // not UTF-8 into text first, and the signature would no longer be of the bytes sent.
      const signature = `v1,${createHmac('sha256', standardWebhooksKey(resign.secret)).update(`${id}.${t}.`).update(body).digest('base64')}`;
      out['webhook-id'] = id;
      out['webhook-timestamp'] = t;
      out['webhook-signature'] = signature;
      if (hadSvix) {
        out['svix-id'] = id;
        out['svix-timestamp'] = t;
        out['svix-signature'] = signature;
      }
      break;
    }
  }
  return out;
}
