// Idempotency keys of the different ways in share one column and one unique index per address,
// but not one key space: a mail's Message-ID, which anyone can choose and send unauthenticated,
// must never match a key an HTTP sender with the inbox secret uses, or a mail could pre-empt (and
// so suppress) a real delivery. Email keys are stored behind a prefix that no HTTP key can carry
// (HTTP keys may hold no control character), and shown without it: an email event's dedupe_key
// still reads as its Message-ID (design.md, "Inbound email").

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
