// Push subscriptions in SQLite (migrations 0019, 0020): one row per subscription, deleted with its address
// by the foreign key. Written through the store's durability barrier like every other write. One
// process owns a SQLite file, so the lease only ever names this instance; it is kept anyway so the
// worker runs the same on both stores.
import type Database from 'better-sqlite3';
import type { DeliveryState, SaveResult, SubscriptionRecord, SubscriptionStore } from '../../push/subscription-store.js';

interface Row {
  address_id: string;
  id: string;
  url: string;
  secret: Buffer;
  filter: string;
  created_at: number;
  expires_at: number | null;
  paused_at: number | null;
  paused_reason: string | null;
  attempts: number;
  next_attempt_at: number | null;
  last_attempt_at: number | null;
  last_status: number | null;
  last_error: string | null;
  last_success_at: number | null;
  previous_secret: Buffer | null;
  secret_rotated_at: number | null;
  delivered_epoch: string | null;
}

const COLUMNS =
  'address_id, id, url, secret, filter, created_at, expires_at, paused_at, paused_reason, attempts, next_attempt_at, last_attempt_at, last_status, last_error, last_success_at, previous_secret, secret_rotated_at, delivered_epoch';

export const subscriptionOf = (r: Row): SubscriptionRecord => ({
  addressId: r.address_id,
  id: r.id,
  url: r.url,
  secret: r.secret,
  filter: r.filter,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  pausedAt: r.paused_at,
  pausedReason: r.paused_reason,
  attempts: r.attempts,
  nextAttemptAt: r.next_attempt_at,
  lastAttemptAt: r.last_attempt_at,
  lastStatus: r.last_status,
  lastError: r.last_error,
  lastSuccessAt: r.last_success_at,
  previousSecret: r.previous_secret,
  secretRotatedAt: r.secret_rotated_at,
  deliveredEpoch: r.delivered_epoch,
});

export class SqliteSubscriptions implements SubscriptionStore {
  private readonly q;
  private readonly saveNow: Database.Transaction<(s: SubscriptionRecord, max: number) => SaveResult>;
  private readonly leaseNow: Database.Transaction<(owner: string, now: number, until: number, limit: number) => Row[]>;

  constructor(
    db: Database.Database,
    private readonly durable: () => Promise<void>,
  ) {
    this.q = {
      replace: db.prepare<[string, Buffer, string, number | null, Buffer | null, number | null, string, string]>(
        'UPDATE subscriptions SET url = ?, secret = ?, filter = ?, expires_at = ?, previous_secret = ?, secret_rotated_at = ? WHERE address_id = ? AND id = ?',
      ),
      addressExists: db.prepare<[string], number>('SELECT 1 FROM addresses WHERE id = ?').pluck(),
      count: db.prepare<[string], number>('SELECT count(*) FROM subscriptions WHERE address_id = ?').pluck(),
      insert: db.prepare<[string, string, string, Buffer, string, number, number | null, Buffer | null, number | null, string | null]>(
        `INSERT INTO subscriptions (address_id, id, url, secret, filter, created_at, expires_at, previous_secret, secret_rotated_at, delivered_epoch)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      epoch: db.prepare<[string, string, string]>('UPDATE subscriptions SET delivered_epoch = ? WHERE address_id = ? AND id = ?'),
      get: db.prepare<[string, string], Row>(`SELECT ${COLUMNS} FROM subscriptions WHERE address_id = ? AND id = ?`),
      list: db.prepare<[string], Row>(`SELECT ${COLUMNS} FROM subscriptions WHERE address_id = ? ORDER BY created_at, id`),
      remove: db.prepare<[string, string]>('DELETE FROM subscriptions WHERE address_id = ? AND id = ?'),
      record: db.prepare<
        [number, number | null, number | null, string | null, number | null, number | null, string | null, number | null, string, string, string]
      >(
        `UPDATE subscriptions SET attempts = ?, next_attempt_at = ?, paused_at = ?, paused_reason = ?, last_attempt_at = ?, last_status = ?,
         last_error = ?, last_success_at = ? WHERE address_id = ? AND id = ? AND lease_owner = ?`,
      ),
      resume: db.prepare<[string, string]>(
        'UPDATE subscriptions SET paused_at = NULL, paused_reason = NULL, attempts = 0, next_attempt_at = NULL WHERE address_id = ? AND id = ?',
      ),
      leasable: db.prepare<[number, string, number, number], Row>(
        `SELECT ${COLUMNS} FROM subscriptions WHERE paused_at IS NULL AND (expires_at IS NULL OR expires_at > ?)
         AND (lease_owner IS NULL OR lease_owner = ? OR lease_until < ?) ORDER BY address_id, id LIMIT ?`,
      ),
      take: db.prepare<[string, number, string, string]>('UPDATE subscriptions SET lease_owner = ?, lease_until = ? WHERE address_id = ? AND id = ?'),
      release: db.prepare<[string]>('UPDATE subscriptions SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = ?'),
      expired: db.prepare<[number]>('DELETE FROM subscriptions WHERE expires_at IS NOT NULL AND expires_at <= ?'),
      paused: db.prepare<[], number>('SELECT count(*) FROM subscriptions WHERE paused_at IS NOT NULL').pluck(),
    };
    this.saveNow = db.transaction((s: SubscriptionRecord, max: number): SaveResult => {
      if (this.q.replace.run(s.url, s.secret, s.filter, s.expiresAt, s.previousSecret, s.secretRotatedAt, s.addressId, s.id).changes > 0) return 'replaced';
      if (this.q.addressExists.get(s.addressId) === undefined) return 'address_gone';
      if ((this.q.count.get(s.addressId) ?? 0) >= max) return 'too_many';
      this.q.insert.run(s.addressId, s.id, s.url, s.secret, s.filter, s.createdAt, s.expiresAt, s.previousSecret, s.secretRotatedAt, s.deliveredEpoch);
      return 'created';
    });
    this.leaseNow = db.transaction((owner: string, now: number, until: number, limit: number): Row[] => {
      const rows = this.q.leasable.all(now, owner, now, limit);
      for (const r of rows) this.q.take.run(owner, until, r.address_id, r.id);
      return rows;
    });
  }

  async saveSubscription(s: SubscriptionRecord, maxPerAddress: number): Promise<SaveResult> {
    const result = this.saveNow.immediate(s, maxPerAddress);
    if (result === 'created' || result === 'replaced') await this.durable();
    return result;
  }

  async getSubscription(addressId: string, id: string): Promise<SubscriptionRecord | null> {
    const r = this.q.get.get(addressId, id);
    return r === undefined ? null : subscriptionOf(r);
  }

  async listSubscriptions(addressId: string): Promise<SubscriptionRecord[]> {
    return this.q.list.all(addressId).map(subscriptionOf);
  }

  async markDeliveredEpoch(addressId: string, id: string, epoch: string): Promise<boolean> {
    const ok = this.q.epoch.run(epoch, addressId, id).changes > 0;
    if (ok) await this.durable();
    return ok;
  }

  async removeSubscription(addressId: string, id: string): Promise<boolean> {
    const removed = this.q.remove.run(addressId, id).changes > 0;
    if (removed) await this.durable();
    return removed;
  }

  async recordDelivery(addressId: string, id: string, owner: string, s: DeliveryState): Promise<boolean> {
    const ok =
      this.q.record.run(
        s.attempts,
        s.nextAttemptAt,
        s.pausedAt,
        s.pausedReason,
        s.lastAttemptAt,
        s.lastStatus,
        s.lastError,
        s.lastSuccessAt,
        addressId,
        id,
        owner,
      ).changes > 0;
    if (ok) await this.durable();
    return ok;
  }

  async resumeSubscription(addressId: string, id: string): Promise<boolean> {
    const ok = this.q.resume.run(addressId, id).changes > 0;
    if (ok) await this.durable();
    return ok;
  }

  async leaseSubscriptions(owner: string, now: number, leaseMs: number, limit: number): Promise<SubscriptionRecord[]> {
    return this.leaseNow.immediate(owner, now, now + leaseMs, limit).map(subscriptionOf);
  }

  async releaseLeases(owner: string): Promise<void> {
    this.q.release.run(owner);
  }

  async deleteExpiredSubscriptions(now: number): Promise<number> {
    const n = this.q.expired.run(now).changes;
    if (n > 0) await this.durable();
    return n;
  }

  async countPausedSubscriptions(): Promise<number> {
    return this.q.paused.get() ?? 0;
  }
}
