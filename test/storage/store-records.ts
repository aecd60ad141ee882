// Records for tests that drive a store directly, below the service: a fresh address (with hashes of
// real credentials) and a rate limit that never refuses.
import { hashSecret, newAddressId, newInboxSecret, newReadToken, newSlug } from '../../src/domain/credentials.js';
import type { AddressRecord } from '../../src/domain/model.js';

/** A page budget no test event reaches. */
export const PAGE_BYTES = 1 << 30;

export const RATE = { key: 'test', limit: 1_000_000, windowMs: 60_000 };

export function newAddress(expiresAt = Date.now() + 3_600_000): AddressRecord {
  const now = Date.now();
  return {
    id: newAddressId(),
    slug: newSlug(),
    name: 'test',
    taskId: null,
    readTokenHash: hashSecret(newReadToken()),
    inboxSecretHash: hashSecret(newInboxSecret()),
    signingKeys: null,
    createdAt: now,
    expiresAt,
  };
}
