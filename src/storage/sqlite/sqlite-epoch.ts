// The store epoch and an address's last sequence in SQLite (epoch/epoch-store.ts, migration 0018).
// The address row's last_sequence may lag the counters held in memory by a flush
// (sqlite-queue-counters.ts), so the highest stored sequence above it counts too (one index probe).
import type Database from 'better-sqlite3';
import type { EpochStore } from '../../epoch/epoch-store.js';

export class SqliteEpoch implements EpochStore {
  private readonly q;
  private cached: string | undefined;

  constructor(db: Database.Database) {
    this.q = {
      epoch: db.prepare<[], string>('SELECT epoch FROM store_epoch WHERE id = 1').pluck(),
      last: db
        .prepare<[string], number>(
          `SELECT max(a.last_sequence, coalesce((SELECT max(sequence) FROM events WHERE address_id = a.id), 0)) FROM addresses a WHERE a.id = ?`,
        )
        .pluck(),
    };
  }

  async epoch(): Promise<string> {
    this.cached ??= this.q.epoch.get() as string;
    return this.cached;
  }

  async lastSequence(addressId: string): Promise<number | null> {
    const n = this.q.last.get(addressId);
    return n === undefined ? null : Number(n);
  }
}
