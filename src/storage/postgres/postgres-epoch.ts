// The store epoch and an address's last sequence in PostgreSQL (epoch/epoch-store.ts, migration
// 0018): last_sequence is written by the append function in the appending transaction.
import type pg from 'pg';
import type { EpochStore } from '../../epoch/epoch-store.js';

export class PostgresEpoch implements EpochStore {
  private cached: Promise<string> | undefined;

  constructor(private readonly pool: pg.Pool) {}

  epoch(): Promise<string> {
    this.cached ??= this.pool.query<{ epoch: string }>('SELECT epoch FROM store_epoch WHERE id = 1').then((r) => r.rows[0]!.epoch);
    // A failed read (the database away) is not kept: the next answer asks again.
    this.cached.catch(() => {
      this.cached = undefined;
    });
    return this.cached;
  }

  async lastSequence(addressId: string): Promise<number | null> {
    const r = await this.pool.query<{ last_sequence: string }>('SELECT last_sequence FROM addresses WHERE id = $1', [addressId]);
    return r.rows[0] === undefined ? null : Number(r.rows[0].last_sequence);
  }
}
