// Idempotency keys of the different ways in share one column and one unique index per address,
// but not one key space: a mail's Message-ID, which anyone can choose and send unauthenticated,
// must never match a key an HTTP sender with the inbox secret uses, or a mail could pre-empt (and
// so suppress) a real delivery. Email keys are stored behind a prefix that no HTTP key can carry
// (HTTP keys may hold no control character), and shown without it: an email event's dedupe_key
// still reads as its Message-ID (design.md, "Inbound email").

import type { SigningScheme } from './signing-schemes.js';

const EMAIL_NAMESPACE = '\u0001email:';

/**
 * What an HTTP key may hold: no control character, so it can never start like a namespaced key, and
 * no lone surrogate, which no store can keep as it was sent (a JSON schema pattern, so matched with
 * the u flag: a surrogate pair is one character and passes).
 */
export const HTTP_DEDUPE_KEY_PATTERN = '^[^\\u0000-\\u001f\\u007f\\ud800-\\udfff]*$';
/** The same rule as a RegExp. */
export const HTTP_DEDUPE_KEY_RE = new RegExp(HTTP_DEDUPE_KEY_PATTERN, 'u');

/** The stored key of a mail, from the key made of its Message-ID. */
export function emailDedupeKey(messageIdKey: string): string {
  return EMAIL_NAMESPACE + messageIdKey;
}

/**
 * Approvals' keys (approval:{id}:{n}) are stored behind a control character for the same reason:
 * an inbox sender could otherwise take an answer's key first and so suppress the answer. They are
 * shown as approval:{id}:{n}.
 */
export const APPROVAL_KEY_PREFIX = '\u0001approval:';

/** The key as an Event shows it. */
export function shownDedupeKey(stored: string): string {
  if (stored.startsWith(APPROVAL_KEY_PREFIX)) return stored.slice(1);
  return stored.startsWith(EMAIL_NAMESPACE) ? stored.slice(EMAIL_NAMESPACE.length) : stored;
}

/**
 * Provider keys (design.md, "Capture URL"): the capture URL keys a provider's delivery by the
 * provider's own id, so the provider's retries are duplicates. Whoever could take such a key first
 * would suppress the genuine delivery, so a provider key is taken only by a delivery the service
 * verified under the address's secret for that provider's scheme, once one is set; any other is
 * stored under `unverified:<key>` (design.md, "Trust: what an agent may believe"). Shopify's
 * signature is not checked, so its keys stay as they are.
 */
export const PROVIDER_KEY_SCHEMES: Readonly<Record<string, SigningScheme | null>> = {
  'github:': 'github',
  'stripe:': 'stripe',
  'slack:': 'slack',
  'webhook:': 'standard_webhooks',
  'shopify:': null,
};
export const UNVERIFIED_KEY_PREFIX = 'unverified:';

/** The provider prefix a key starts with (`github:`), or undefined. */
export function providerPrefix(key: string): string | undefined {
  const colon = key.indexOf(':');
  if (colon < 0) return undefined;
  const prefix = key.slice(0, colon + 1);
  return Object.hasOwn(PROVIDER_KEY_SCHEMES, prefix) ? prefix : undefined;
}

/**
 * An inbox delivery's key: never a provider's. The inbox URL proves nothing about its sender, so a
 * provider-shaped key is kept apart (`unverified:github:…`), where it still dedupes its own repeats.
 */
export function inboxDedupeKey(key: string): string {
  return providerPrefix(key) === undefined ? key : UNVERIFIED_KEY_PREFIX + key;
}

/**
 * A captured request's key: a provider key stays itself only when no secret is set for its
 * scheme, or when the request's signature verified under that scheme's secret.
 */
export function captureDedupeKey(key: string, secretSet: (scheme: SigningScheme) => boolean, verifiedScheme: SigningScheme | null): string {
  const prefix = providerPrefix(key);
  if (prefix === undefined) return key;
  const scheme = PROVIDER_KEY_SCHEMES[prefix] ?? null;
  if (scheme === null || !secretSet(scheme) || verifiedScheme === scheme) return key;
  return UNVERIFIED_KEY_PREFIX + key;
}
