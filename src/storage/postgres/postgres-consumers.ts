// Named consumers' positions in PostgreSQL (migration 0007): one row per address and name, which
// every instance reads and writes, so a consumer has one position whichever instance it asks.
// Moving an existing position is one UPDATE; a new name is inserted under the address row's lock,
// so instances creating consumers at once cannot pass the per-address cap together. A name that a
// parallel seek inserted after this one's UPDATE found nothing is moved, not refused, even at the
// cap: a stored name is never too_many (as on SQLite, where the UPDATE and the insert are one
// transaction).
import type pg from 'pg';
import type { ConsumerPositions, ConsumerRecord, SeekResult } from '../../consumers/consumer-positions.js';

export class PostgresConsumerPositions implements ConsumerPositions {
  constructor(private readonly pool: pg.Pool) {}

  async seek(addressId: string, name: string, cursor: number, now: number, maxPerAddress: number): Promise<SeekResult> {
    const moved = await this.pool.query('UPDATE consumers SET cursor = $1, updated_at = $2 WHERE address_id = $3 AND name = $4', [
      cursor,
      now,
      addressId,
      name,
    ]);
    if (moved.rowCount === 1) return 'stored';
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const found = await client.query('SELECT 1 FROM addresses WHERE id = $1 FOR UPDATE', [addressId]);
      let result: SeekResult = 'stored';
      if (found.rowCount === 0) result = 'address_gone';
      else {
        const inserted = await client.query(
          `INSERT INTO consumers (address_id, name, cursor, updated_at)
           SELECT $1, $2, $3, $4 WHERE (SELECT count(*) FROM consumers WHERE address_id = $1) < $5
             OR EXISTS (SELECT 1 FROM consumers WHERE address_id = $1 AND name = $2)
           ON CONFLICT (address_id, name) DO UPDATE SET cursor = EXCLUDED.cursor, updated_at = EXCLUDED.updated_at`,
          [addressId, name, cursor, now, maxPerAddress],
        );
        if (inserted.rowCount === 0) result = 'too_many';
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

  async position(addressId: string, name: string): Promise<number | null> {
    const r = await this.pool.query<{ cursor: string }>('SELECT cursor FROM consumers WHERE address_id = $1 AND name = $2', [addressId, name]);
    return r.rows[0] ? Number(r.rows[0].cursor) : null;
  }

  async list(addressId: string): Promise<ConsumerRecord[]> {
    const r = await this.pool.query<{ name: string; cursor: string; updated_at: string }>(
      'SELECT name, cursor, updated_at FROM consumers WHERE address_id = $1 ORDER BY name',
      [addressId],
    );
    return r.rows.map((row) => ({ name: row.name, cursor: Number(row.cursor), updatedAt: Number(row.updated_at) }));
  }

  async remove(addressId: string, name: string): Promise<boolean> {
    const r = await this.pool.query('DELETE FROM consumers WHERE address_id = $1 AND name = $2', [addressId, name]);
    return r.rowCount === 1;
  }
}
