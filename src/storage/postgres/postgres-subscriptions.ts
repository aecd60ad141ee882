// Push subscriptions in PostgreSQL (migrations 0019, 0020), as in SQLite, shared by every instance: the lease
// (lease_owner, lease_until) makes exactly one instance deliver a subscription at a time; an
// instance that dies stops renewing it, and another takes it once lease_until has passed.
import type pg from 'pg';
import type { DeliveryState, SaveResult, SubscriptionRecord, SubscriptionStore } from '../../push/subscription-store.js';

interface Row {
  address_id: string;
  id: string;
  url: string;
  secret: Buffer;
  filter: string;
  created_at: string;
  expires_at: string | null;
  paused_at: string | null;
  paused_reason: string | null;
  attempts: string;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_status: string | null;
  last_error: string | null;
  last_success_at: string | null;
  previous_secret: Buffer | null;
  secret_rotated_at: string | null;
  delivered_epoch: string | null;
}

const COLUMNS =
  'address_id, id, url, secret, filter, created_at, expires_at, paused_at, paused_reason, attempts, next_attempt_at, last_attempt_at, last_status, last_error, last_success_at, previous_secret, secret_rotated_at, delivered_epoch';

const num = (v: string | null): number | null => (v === null ? null : Number(v));

const subscriptionOf = (r: Row): SubscriptionRecord => ({
  addressId: r.address_id,
  id: r.id,
  url: r.url,
  secret: r.secret,
  filter: r.filter,
  createdAt: Number(r.created_at),
  expiresAt: num(r.expires_at),
  pausedAt: num(r.paused_at),
  pausedReason: r.paused_reason,
  attempts: Number(r.attempts),
  nextAttemptAt: num(r.next_attempt_at),
  lastAttemptAt: num(r.last_attempt_at),
  lastStatus: num(r.last_status),
  lastError: r.last_error,
  lastSuccessAt: num(r.last_success_at),
  previousSecret: r.previous_secret,
  secretRotatedAt: num(r.secret_rotated_at),
  deliveredEpoch: r.delivered_epoch,
});

export class PostgresSubscriptions implements SubscriptionStore {
  constructor(private readonly pool: pg.Pool) {}

  async saveSubscription(s: SubscriptionRecord, maxPerAddress: number): Promise<SaveResult> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      // The address row, locked: parallel creates on one address count one after the other, so the cap holds.
      const address = await client.query('SELECT 1 FROM addresses WHERE id = $1 FOR UPDATE', [s.addressId]);
      let result: SaveResult;
      if ((address.rowCount ?? 0) === 0) result = 'address_gone';
      else {
        const replaced = await client.query(
          `UPDATE subscriptions SET url = $1, secret = $2, filter = $3, expires_at = $4, previous_secret = $5, secret_rotated_at = $6
           WHERE address_id = $7 AND id = $8`,
          [s.url, s.secret, s.filter, s.expiresAt, s.previousSecret, s.secretRotatedAt, s.addressId, s.id],
        );
        if ((replaced.rowCount ?? 0) > 0) result = 'replaced';
        else {
          const n = await client.query<{ n: string }>('SELECT count(*) AS n FROM subscriptions WHERE address_id = $1', [s.addressId]);
          if (Number(n.rows[0]?.n ?? 0) >= maxPerAddress) result = 'too_many';
          else {
            await client.query(
              `INSERT INTO subscriptions (address_id, id, url, secret, filter, created_at, expires_at, previous_secret, secret_rotated_at, delivered_epoch)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
              [s.addressId, s.id, s.url, s.secret, s.filter, s.createdAt, s.expiresAt, s.previousSecret, s.secretRotatedAt, s.deliveredEpoch],
            );
            result = 'created';
          }
        }
      }
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }

  async getSubscription(addressId: string, id: string): Promise<SubscriptionRecord | null> {
    const r = await this.pool.query<Row>(`SELECT ${COLUMNS} FROM subscriptions WHERE address_id = $1 AND id = $2`, [addressId, id]);
    const row = r.rows[0];
    return row === undefined ? null : subscriptionOf(row);
  }

  async listSubscriptions(addressId: string): Promise<SubscriptionRecord[]> {
    const r = await this.pool.query<Row>(`SELECT ${COLUMNS} FROM subscriptions WHERE address_id = $1 ORDER BY created_at, id`, [addressId]);
    return r.rows.map(subscriptionOf);
  }

  async markDeliveredEpoch(addressId: string, id: string, epoch: string): Promise<boolean> {
    const r = await this.pool.query('UPDATE subscriptions SET delivered_epoch = $1 WHERE address_id = $2 AND id = $3', [epoch, addressId, id]);
    return (r.rowCount ?? 0) > 0;
  }

  async removeSubscription(addressId: string, id: string): Promise<boolean> {
    const r = await this.pool.query('DELETE FROM subscriptions WHERE address_id = $1 AND id = $2', [addressId, id]);
    return (r.rowCount ?? 0) > 0;
  }

  async recordDelivery(addressId: string, id: string, owner: string, s: DeliveryState): Promise<boolean> {
    const r = await this.pool.query(
      `UPDATE subscriptions SET attempts = $1, next_attempt_at = $2, paused_at = $3, paused_reason = $4, last_attempt_at = $5, last_status = $6,
       last_error = $7, last_success_at = $8 WHERE address_id = $9 AND id = $10 AND lease_owner = $11`,
      [s.attempts, s.nextAttemptAt, s.pausedAt, s.pausedReason, s.lastAttemptAt, s.lastStatus, s.lastError, s.lastSuccessAt, addressId, id, owner],
    );
    return (r.rowCount ?? 0) > 0;
  }

  async resumeSubscription(addressId: string, id: string): Promise<boolean> {
    const r = await this.pool.query(
      'UPDATE subscriptions SET paused_at = NULL, paused_reason = NULL, attempts = 0, next_attempt_at = NULL WHERE address_id = $1 AND id = $2',
      [addressId, id],
    );
    return (r.rowCount ?? 0) > 0;
  }

  async leaseSubscriptions(owner: string, now: number, leaseMs: number, limit: number): Promise<SubscriptionRecord[]> {
    const returning = COLUMNS.split(', ')
      .map((c) => `s.${c}`)
      .join(', ');
    // The owner's own leases are renewed first, waiting for a row lock rather than skipping it: the
    // lock is this instance's own delivery write (a short UPDATE), and a renewal that skipped it left
    // the subscription out of the sweep, which stopped its runner mid-attempt and sent the event
    // again. Only taking others' free or run-out leases skips locked rows.
    const renewed = await this.pool.query<Row>(
      `UPDATE subscriptions s SET lease_until = $3
       WHERE lease_owner = $1 AND paused_at IS NULL AND (expires_at IS NULL OR expires_at > $2)
       RETURNING ${returning}`,
      [owner, now, now + leaseMs],
    );
    const room = limit - renewed.rows.length;
    if (room <= 0) return renewed.rows.map(subscriptionOf);
    // SKIP LOCKED: two instances leasing at once take different rows instead of waiting on each other.
    const taken = await this.pool.query<Row>(
      `UPDATE subscriptions s SET lease_owner = $1, lease_until = $3
       FROM (SELECT address_id, id FROM subscriptions
             WHERE paused_at IS NULL AND (expires_at IS NULL OR expires_at > $2) AND lease_owner IS DISTINCT FROM $1
               AND (lease_owner IS NULL OR lease_until < $2)
             ORDER BY address_id, id LIMIT $4 FOR UPDATE SKIP LOCKED) t
       WHERE s.address_id = t.address_id AND s.id = t.id
       RETURNING ${returning}`,
      [owner, now, now + leaseMs, room],
    );
    return [...renewed.rows, ...taken.rows].map(subscriptionOf);
  }

  async releaseLeases(owner: string): Promise<void> {
    await this.pool.query('UPDATE subscriptions SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = $1', [owner]);
  }

  async deleteExpiredSubscriptions(now: number): Promise<number> {
    const r = await this.pool.query('DELETE FROM subscriptions WHERE expires_at IS NOT NULL AND expires_at <= $1', [now]);
    return r.rowCount ?? 0;
  }

  async countPausedSubscriptions(): Promise<number> {
    const r = await this.pool.query<{ n: string }>('SELECT count(*) AS n FROM subscriptions WHERE paused_at IS NOT NULL');
    return Number(r.rows[0]?.n ?? 0);
  }
}
