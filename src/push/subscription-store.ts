// What push subscriptions need from a store (design.md, "Push subscriptions"): one row per
// subscription, deleted with its address; the delivery state of the event after its position; a
// lease saying which instance delivers it. Both stores implement it (storage/*/…-subscriptions.ts,
// migrations 0019 and 0020) and expose it as `subscriptions`. The position itself is the named consumer
// push:<id> (src/consumers), never a column here.

import type { ConsumerPositions } from '../consumers/consumer-positions.js';
import type { Store } from '../domain/ports.js';

/**
 * The store as the push room uses it: the Store port, its subscriptions, named consumers' positions,
 * and an address's last sequence (the epoch store's, read for the lag in events only).
 */
export type PushStore = Store & {
  readonly subscriptions: SubscriptionStore;
  readonly consumers: ConsumerPositions;
  readonly epochs?: { lastSequence(addressId: string): Promise<number | null> };
};

export interface SubscriptionRecord {
  addressId: string;
  id: string;
  url: string;
  /** The signing secret, sealed (subscription-secret.ts). */
  secret: Buffer;
  /** JSON {"type": [...], "match": [...]}: the filter of reads (event-filter.ts). */
  filter: string;
  createdAt: number;
  expiresAt: number | null;
  pausedAt: number | null;
  pausedReason: string | null;
  /** Failed attempts on the event after the position (0 when the last one succeeded). */
  attempts: number;
  nextAttemptAt: number | null;
  lastAttemptAt: number | null;
  lastStatus: number | null;
  lastError: string | null;
  lastSuccessAt: number | null;
  /** The secret a refresh replaced, sealed; it signs beside `secret` until secretRotatedAt + PUSH_ROTATION_GRACE_MS (migration 0020). */
  previousSecret: Buffer | null;
  secretRotatedAt: number | null;
  /** The store epoch the subscription last delivered under (null: not yet known); a restore gives the store a new one. */
  deliveredEpoch: string | null;
}

/** The delivery state the worker writes after each attempt, and resume clears. */
export type DeliveryState = Pick<
  SubscriptionRecord,
  'attempts' | 'nextAttemptAt' | 'pausedAt' | 'pausedReason' | 'lastAttemptAt' | 'lastStatus' | 'lastError' | 'lastSuccessAt'
>;

/** Outcome of storing a subscription: a new one is refused once the address holds `maxPerAddress`. */
export type SaveResult = 'created' | 'replaced' | 'too_many' | 'address_gone';

export interface SubscriptionStore {
  /**
   * Stores a subscription. A new id is refused past `maxPerAddress`; an existing id is replaced
   * (url, secret, filter, expiry, previous secret and rotation time), its delivery state, lease and
   * delivered epoch kept: a refresh.
   */
  saveSubscription(s: SubscriptionRecord, maxPerAddress: number): Promise<SaveResult>;
  getSubscription(addressId: string, id: string): Promise<SubscriptionRecord | null>;
  listSubscriptions(addressId: string): Promise<SubscriptionRecord[]>;
  /** Records the store epoch the subscription delivers under; false when there is no such subscription. */
  markDeliveredEpoch(addressId: string, id: string, epoch: string): Promise<boolean>;
  /** Deletes one; false when there was none. */
  removeSubscription(addressId: string, id: string): Promise<boolean>;
  /** Writes the delivery state, only while `owner` holds the lease (false otherwise: another instance took over). */
  recordDelivery(addressId: string, id: string, owner: string, state: DeliveryState): Promise<boolean>;
  /** Clears the pause and the failed attempts; false when there is no such subscription. */
  resumeSubscription(addressId: string, id: string): Promise<boolean>;
  /**
   * Takes or renews the lease of every active subscription (not paused, not expired at `now`) whose
   * lease is free, expired or already `owner`'s, up to `limit`, until `now + leaseMs`; returns them.
   */
  leaseSubscriptions(owner: string, now: number, leaseMs: number, limit: number): Promise<SubscriptionRecord[]>;
  /** Gives up `owner`'s leases (a clean shutdown), so another instance takes over at once. */
  releaseLeases(owner: string): Promise<void>;
  /** Deletes subscriptions whose expiry passed; returns how many. */
  deleteExpiredSubscriptions(now: number): Promise<number>;
  /** Subscriptions paused now (a metric). */
  countPausedSubscriptions(): Promise<number>;
}
