// Sender policies in PostgreSQL (migration 0013): one row per address, deleted with it by the foreign
// key; every instance reads the same row, so a policy applies on all of them at once.
import type pg from 'pg';
import type { SenderPolicyStore, StoredSenderPolicy } from '../../sender-policy/sender-policy-store.js';

export class PostgresSenderPolicies implements SenderPolicyStore {
  constructor(private readonly pool: pg.Pool) {}

  async getSenderPolicy(addressId: string): Promise<StoredSenderPolicy | null> {
    const r = await this.pool.query<{ policy: string; updated_at: string }>('SELECT policy, updated_at FROM sender_policies WHERE address_id = $1', [
      addressId,
    ]);
    const row = r.rows[0];
    return row === undefined ? null : { policy: row.policy, updatedAt: Number(row.updated_at) };
  }

  async setSenderPolicy(addressId: string, policy: string | null, now: number): Promise<boolean> {
    if (policy === null) {
      const r = await this.pool.query('WITH gone AS (DELETE FROM sender_policies WHERE address_id = $1) SELECT 1 FROM addresses WHERE id = $1', [addressId]);
      return (r.rowCount ?? 0) > 0;
    }
    // The address row is read in the statement: an address deleted meanwhile stores nothing.
    const r = await this.pool.query(
      `INSERT INTO sender_policies (address_id, policy, updated_at) SELECT id, $2, $3 FROM addresses WHERE id = $1
       ON CONFLICT (address_id) DO UPDATE SET policy = excluded.policy, updated_at = excluded.updated_at`,
      [addressId, policy, now],
    );
    return (r.rowCount ?? 0) > 0;
  }
}
