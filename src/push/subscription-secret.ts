// A subscription's signing secret (design.md, "Push subscriptions"): Standard Webhooks' form,
// whsec_ + base64 of 24-64 random bytes, generated when the subscriber gives none and shown once.
// The worker signs with it long after the request that created it, without any of the address's
// credentials, so it cannot be sealed under the read token as signing secrets are: it is sealed the
// same way (AES-256-GCM, domain/signing-keys.ts) under the instance's push key, PUSH_SEAL_KEY, or
// when unset a random key kept in DATA_DIR/push-seal.key (0600). A copy of the database alone does
// not reveal a secret; several instances on one PostgreSQL must share PUSH_SEAL_KEY.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ApiError } from '../domain/errors.js';
import { openWithDataKey, sealWithDataKey } from '../domain/signing-keys.js';

const PREFIX = 'whsec_';
export const SECRET_MIN_BYTES = 24;
export const SECRET_MAX_BYTES = 64;
export const SEAL_KEY_FILE = 'push-seal.key';

export const generateSecret = (): string => PREFIX + randomBytes(32).toString('base64');

/** The given secret, checked: 400 naming the field and the form. */
export function checkSecret(secret: string): string {
  const b64 = secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : '';
  const bytes = /^[A-Za-z0-9+/]+={0,2}$/.test(b64) ? Buffer.from(b64, 'base64') : Buffer.alloc(0);
  if (bytes.length < SECRET_MIN_BYTES || bytes.length > SECRET_MAX_BYTES || bytes.toString('base64').replace(/=+$/, '') !== b64.replace(/=+$/, '')) {
    throw new ApiError(
      'invalid_request',
      `Invalid body field 'secret': must be whsec_ followed by the base64 of ${SECRET_MIN_BYTES}-${SECRET_MAX_BYTES} random bytes ` +
        "(e.g. 'whsec_' + base64 of 32 bytes from openssl rand -base64 32), or leave it out and one is generated and shown once.",
    );
  }
  return secret;
}

/** The instance's push key: PUSH_SEAL_KEY, or the key file in DATA_DIR, created on first use. */
export function loadSealKey(configured: Buffer | undefined, dataDir: string): Buffer {
  if (configured) return configured;
  const dir = resolve(dataDir);
  const file = join(dir, SEAL_KEY_FILE);
  try {
    const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
    if (key.length === 32) return key;
    throw new Error(`${file} does not hold base64 of 32 bytes`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  mkdirSync(dir, { recursive: true });
  try {
    writeFileSync(file, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err; // another process wrote it first: read theirs
  }
  return Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
}

const context = (addressId: string, id: string) => `${addressId}/push/${id}`;

export class SecretSeal {
  constructor(private readonly key: Buffer) {}

  seal(addressId: string, id: string, secret: string): Buffer {
    return sealWithDataKey(this.key, context(addressId, id), Buffer.from(secret));
  }

  /** The secret, or null when it does not open (another instance's key, altered bytes). */
  open(addressId: string, id: string, sealed: Buffer): string | null {
    return openWithDataKey(this.key, context(addressId, id), sealed)?.toString() ?? null;
  }
}
