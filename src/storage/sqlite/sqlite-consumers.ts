// Named consumers' positions in SQLite (migration 0007). Writes go through the same durability
// barrier as every other write of the store: a position is on disk before the read it precedes
// is answered.
import type Database from 'better-sqlite3';
import type { ConsumerPositions, ConsumerRecord, SeekResult } from '../../consumers/consumer-positions.js';

export class SqliteConsumerPositions implements ConsumerPositions {
  private readonly q;
  private readonly seekNow: Database.Transaction<(addressId: string, name: string, cursor: number, now: number, max: number) => SeekResult>;

  constructor(
    db: Database.Database,
    private readonly durable: () => Promise<void>,
  ) {
    this.q = {
      update: db.prepare<[number, number, string, string]>('UPDATE consumers SET cursor = ?, updated_at = ? WHERE address_id = ? AND name = ?'),
      count: db.prepare<[string], number>('SELECT count(*) FROM consumers WHERE address_id = ?').pluck(),
      addressExists: db.prepare<[string], number>('SELECT 1 FROM addresses WHERE id = ?').pluck(),
      insert: db.prepare<[string, string, number, number]>('INSERT INTO consumers (address_id, name, cursor, updated_at) VALUES (?, ?, ?, ?)'),
      position: db.prepare<[string, string], number>('SELECT cursor FROM consumers WHERE address_id = ? AND name = ?').pluck(),
      list: db.prepare<[string], { name: string; cursor: number; updated_at: number }>(
        'SELECT name, cursor, updated_at FROM consumers WHERE address_id = ? ORDER BY name',
      ),
      remove: db.prepare<[string, string]>('DELETE FROM consumers WHERE address_id = ? AND name = ?'),
    };
    this.seekNow = db.transaction((addressId: string, name: string, cursor: number, now: number, max: number): SeekResult => {
      if (this.q.update.run(cursor, now, addressId, name).changes > 0) return 'stored';
      if (this.q.addressExists.get(addressId) === undefined) return 'address_gone';
      if ((this.q.count.get(addressId) ?? 0) >= max) return 'too_many';
      this.q.insert.run(addressId, name, cursor, now);
      return 'stored';
    });
  }

  async seek(addressId: string, name: string, cursor: number, now: number, maxPerAddress: number): Promise<SeekResult> {
    const result = this.seekNow.immediate(addressId, name, cursor, now, maxPerAddress);
    if (result === 'stored') await this.durable();
    return result;
  }

  async position(addressId: string, name: string): Promise<number | null> {
    return this.q.position.get(addressId, name) ?? null;
  }

  async list(addressId: string): Promise<ConsumerRecord[]> {
    return this.q.list.all(addressId).map((r) => ({ name: r.name, cursor: r.cursor, updatedAt: r.updated_at }));
  }

  async remove(addressId: string, name: string): Promise<boolean> {
    const removed = this.q.remove.run(addressId, name).changes > 0;
    if (removed) await this.durable();
    return removed;
  }
}
