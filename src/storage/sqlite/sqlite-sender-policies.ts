// Sender policies in SQLite (migration 0013): one row per address, deleted with it by the foreign
// key. Written through the store's durability barrier like every other write.
import type Database from 'better-sqlite3';
import type { SenderPolicyStore, StoredSenderPolicy } from '../../sender-policy/sender-policy-store.js';

export class SqliteSenderPolicies implements SenderPolicyStore {
  private readonly q;

  constructor(
    db: Database.Database,
    private readonly durable: () => Promise<void>,
  ) {
    this.q = {
      get: db.prepare<[string], { policy: string; updated_at: number }>('SELECT policy, updated_at FROM sender_policies WHERE address_id = ?'),
      upsert: db.prepare<[{ id: string; policy: string; now: number }]>(
        `INSERT INTO sender_policies (address_id, policy, updated_at) SELECT id, @policy, @now FROM addresses WHERE id = @id
         ON CONFLICT (address_id) DO UPDATE SET policy = excluded.policy, updated_at = excluded.updated_at`,
      ),
      remove: db.prepare<[string]>('DELETE FROM sender_policies WHERE address_id = ?'),
      addressExists: db.prepare<[string], number>('SELECT 1 FROM addresses WHERE id = ?').pluck(),
    };
  }

  async getSenderPolicy(addressId: string): Promise<StoredSenderPolicy | null> {
    const r = this.q.get.get(addressId);
    return r === undefined ? null : { policy: r.policy, updatedAt: r.updated_at };
  }

  async setSenderPolicy(addressId: string, policy: string | null, now: number): Promise<boolean> {
    if (policy === null) {
      this.q.remove.run(addressId);
      await this.durable();
      return this.q.addressExists.get(addressId) !== undefined;
    }
    const stored = this.q.upsert.run({ id: addressId, policy, now }).changes > 0;
    if (stored) await this.durable();
    return stored;
  }
}
