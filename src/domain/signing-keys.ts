// Signing secrets (GitHub, Stripe, Slack, Standard Webhooks) must be usable in clear to check a
// signature, so they cannot be hashed like tokens. They are sealed instead, with no key file for an
// operator to manage: each address gets a random data key at creation, and that key is stored only
// sealed twice, once under a key derived from its read token (to replace the secrets, over the
// bearer-authenticated PUT) and once under a key derived from its inbox secret (to check a signature,
// on a capture request, whose URL carries that secret). The database holds only SHA-256 hashes of
// those two credentials, from which neither derived key follows, so a copy of the database alone does
// not reveal a signing secret. A lost read token and inbox secret lose the secrets, and nothing else.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
const SEALED_KEY_BYTES = IV_BYTES + TAG_BYTES + KEY_BYTES;
/** The stored column: a version byte, then the data key sealed for the reader, then for the sender. */
export const SIGNING_KEYS_BYTES = 1 + 2 * SEALED_KEY_BYTES;

type Holder = 'reader' | 'sender';

function keyFrom(credential: string, addressId: string, holder: Holder): Buffer {
  return Buffer.from(hkdfSync('sha256', credential, addressId, `return-address signing key for the ${holder}`, KEY_BYTES));
}

function seal(key: Buffer, plain: Buffer, context: string): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(context));
  const body = Buffer.concat([cipher.update(plain), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

/** The plain bytes, or null when the key is wrong or the bytes were altered. */
function open(key: Buffer, sealed: Buffer, context: string): Buffer | null {
  if (sealed.length < IV_BYTES + TAG_BYTES) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
  } catch {
    return null;
  }
}

/** A new address's data key, sealed for its reader and its sender (the `signing_keys` column). */
export function newSigningKeys(addressId: string, readToken: string, inboxSecret: string): Buffer {
  const dataKey = randomBytes(KEY_BYTES);
  return Buffer.concat([
    Buffer.of(VERSION),
    seal(keyFrom(readToken, addressId, 'reader'), dataKey, `${addressId}:reader`),
    seal(keyFrom(inboxSecret, addressId, 'sender'), dataKey, `${addressId}:sender`),
  ]);
}

/** The data key, opened with the credential of one holder; null when it does not open. */
export function openDataKey(signingKeys: Buffer, addressId: string, holder: Holder, credential: string): Buffer | null {
  if (signingKeys.length !== SIGNING_KEYS_BYTES || signingKeys[0] !== VERSION) return null;
  const start = 1 + (holder === 'reader' ? 0 : SEALED_KEY_BYTES);
  return open(keyFrom(credential, addressId, holder), signingKeys.subarray(start, start + SEALED_KEY_BYTES), `${addressId}:${holder}`);
}

export function sealWithDataKey(dataKey: Buffer, addressId: string, plain: Buffer): Buffer {
  return seal(dataKey, plain, `${addressId}:signing-secrets`);
}

export function openWithDataKey(dataKey: Buffer, addressId: string, sealed: Buffer): Buffer | null {
  return open(dataKey, sealed, `${addressId}:signing-secrets`);
}

/**
 * The same data key sealed again after a credential rotation: opened with the reader's current
 * token, then the half of each rotated credential is sealed under the new one while the other half
 * is kept as it is. The signing secrets themselves (sealed under the data key) do not change, so
 * they stay readable with the new credentials. Null when the key does not open with `readToken`.
 */
export function resealSigningKeys(
  signingKeys: Buffer,
  addressId: string,
  readToken: string,
  next: { readToken?: string | undefined; inboxSecret?: string | undefined },
): Buffer | null {
  const dataKey = openDataKey(signingKeys, addressId, 'reader', readToken);
  if (dataKey === null) return null;
  const reader =
    next.readToken === undefined
      ? signingKeys.subarray(1, 1 + SEALED_KEY_BYTES)
      : seal(keyFrom(next.readToken, addressId, 'reader'), dataKey, `${addressId}:reader`);
  const sender =
    next.inboxSecret === undefined
      ? signingKeys.subarray(1 + SEALED_KEY_BYTES, 1 + 2 * SEALED_KEY_BYTES)
      : seal(keyFrom(next.inboxSecret, addressId, 'sender'), dataKey, `${addressId}:sender`);
  return Buffer.concat([Buffer.of(VERSION), reader, sender]);
}
