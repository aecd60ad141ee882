// The PostgreSQL store's reads, all on the reads pool (design.md, "Bounded work"): pages, filtered
// reads (event-filter-sql.ts), blobs in chunks and the totals of /metrics. However many slow reads are
// queued, a delivery or an ack never waits for their connections; a read that waits too long for one
// is answered 503 with Retry-After (pg's connection timeout, or statement_timeout).
import type pg from 'pg';
import { BLOB_CHUNK_BYTES, type BlobName, type StoredBlob } from '../../blobs/event-blob.js';
import { type EventFilter, SCAN_BYTES, SCAN_EVENTS } from '../../domain/event-filter.js';
import type { EventPageRecord, ScanPageRecord } from '../../domain/model.js';
import { filterSql, filterSqlParts, needsDataJson, postgresJsonb, type ScanRow, SqlParams, scanPage, scanSql } from '../event-filter-sql.js';
import { boundedPageSql, cutPage, type EventRow, toEvent } from '../rows.js';
import { jsonBytesSql } from '../stored-bytes-sql.js';

export class PostgresReads {
  /** Page reads waiting for a connection, by their arguments: an identical read joins one. */
  private readonly queuedPages = new Map<string, Promise<EventPageRecord | null>>();

  constructor(private readonly readPool: pg.Pool) {}

  async openBlob(addressId: string, eventId: string, name: BlobName): Promise<StoredBlob | null> {
    const r = await this.readPool.query<{ sequence: string; content_type: string; sha256: string; size: string }>(
      `SELECT b.sequence, b.content_type, b.sha256, b.size FROM events e
       JOIN event_blobs b ON b.address_id = e.address_id AND b.sequence = e.sequence
       WHERE substr(e.id, 10, 9) = substr($1::text, 10, 9) AND e.id = $1 AND e.address_id = $2 AND b.name = $3`,
      [eventId, addressId, name],
    );
    const b = r.rows[0];
    if (!b) return null;
    const pool = this.readPool;
    const size = Number(b.size);
    return {
      contentType: b.content_type,
      size,
      sha256: b.sha256,
      async *chunks() {
        // STORAGE EXTERNAL (migration 0006): each substring reads only its chunk's TOAST pages.
        for (let offset = 0; offset < size; offset += BLOB_CHUNK_BYTES) {
          const c = await pool.query<{ chunk: Buffer | null }>(
            'SELECT substring(bytes FROM $1 FOR $2) AS chunk FROM event_blobs WHERE address_id = $3 AND sequence = $4 AND name = $5',
            [offset + 1, BLOB_CHUNK_BYTES, addressId, b.sequence, name],
          );
          const chunk = c.rows[0]?.chunk;
          if (!chunk) throw new Error('the blob was deleted while it was being read');
          yield chunk;
        }
      },
    };
  }

  /**
   * A page read. Identical reads share one statement while it waits for a connection: its snapshot is
   * taken after every caller that joined it was called, so none can miss an event committed before
   * its call (and a waiter registered before its read is woken by any later one). A statement
   * already sent is not joined. 100 streams attaching to one address with 12 MB of events decoded
   * those rows 100 times, saturating the event loop (design.md, "Bounded work").
   */
  listEvents(addressId: string, after: number, limit: number, maxBytes: number): Promise<EventPageRecord | null> {
    const key = `${addressId} ${after} ${limit} ${maxBytes}`;
    const queued = this.queuedPages.get(key);
    if (queued) return queued;
    const read = (async () => {
      let client: pg.PoolClient;
      try {
        client = await this.readPool.connect();
      } finally {
        // Sent from here on (or failed): later callers read on their own.
        this.queuedPages.delete(key);
      }
      // As pool.query does: a connection that fails during the statement rejects it (not an
      // uncaught 'error') and is not given back to the pool for reuse.
      let failed: (err: Error) => void = () => {};
      const broken = new Promise<never>((_, reject) => {
        failed = reject;
      });
      client.once('error', failed);
      try {
        const page = await Promise.race([this.pageOn(client, addressId, after, limit, maxBytes), broken]);
        client.release();
        return page;
      } catch (err) {
        client.release(err as Error);
        throw err;
      } finally {
        client.removeListener('error', failed);
      }
    })();
    this.queuedPages.set(key, read);
    return read;
  }

  private async pageOn(client: pg.PoolClient, addressId: string, after: number, limit: number, maxBytes: number): Promise<EventPageRecord | null> {
    // One statement: no row when the address does not exist, one row of NULLs when its page is empty.
    const r = await client.query<{ [K in keyof EventRow]: EventRow[K] | null } & { fetched: string | null }>(
      `SELECT e.* FROM addresses a
       LEFT JOIN LATERAL (${boundedPageSql(jsonBytesSql('postgres'), {
         address: 'a.id',
         after: '$2',
         below: null,
         limit: '$3',
         budget: '$4',
       })}) e ON true
       WHERE a.id = $1`,
      [addressId, after, limit + 1, maxBytes],
    );
    if (r.rows.length === 0) return null;
    const { rows, hasMore } = cutPage(
      r.rows.filter((row): row is EventRow & { fetched: string } => row.id !== null),
      limit,
    );
    return { events: rows.map(toEvent), hasMore };
  }

  /** A filtered read in one statement (event-filter-sql.ts); `data` is cast to jsonb once per event that passes the rest of the filter, only when the filter reads it. */
  async scanEvents(addressId: string, after: number, filter: EventFilter, limit: number, maxBytes: number): Promise<ScanPageRecord | null> {
    const p = new SqlParams('postgres');
    const sql = scanSql({
      address: p.add(addressId),
      after: p.add(after),
      below: null,
      scanEvents: SCAN_EVENTS,
      scanBytes: SCAN_BYTES,
      limit: `${p.add(limit + 1)}::bigint`,
      budget: p.add(maxBytes),
      bytes: jsonBytesSql('postgres'),
      ...(needsDataJson(filter)
        ? (({ plain, json }) => ({ filter: plain, dataJson: { expr: postgresJsonb('data'), filter: json } }))(filterSqlParts(filter, p))
        : { filter: filterSql(filter, p), dataJson: null }),
    });
    const r = await this.readPool.query<ScanRow>(sql, p.bound());
    return scanPage(r.rows, after, limit);
  }

  async queueTotals(countCap: number): Promise<{ stored: number; unacknowledged: number; oldestUnacknowledgedAt: number | null }> {
    const r = await this.readPool.query<{ stored: string; unacked: string; oldest: string | null }>(
      `SELECT (SELECT coalesce(sum(event_count), 0) FROM addresses) AS stored,
              (SELECT count(*) FROM (SELECT 1 FROM events WHERE acknowledged_at IS NULL LIMIT $1) s) AS unacked,
              (SELECT min(created_at) FROM events WHERE acknowledged_at IS NULL) AS oldest`,
      [countCap],
    );
    const row = r.rows[0]!;
    return { stored: Number(row.stored), unacknowledged: Number(row.unacked), oldestUnacknowledgedAt: row.oldest === null ? null : Number(row.oldest) };
  }
}
