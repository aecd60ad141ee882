// The SQLite store's reads of events: pages (cached, sqlite-read-cache.ts), filtered reads
// (event-filter-sql.ts) and blobs in chunks. Every read stops below the oldest batch not yet durable
// (event-visibility.ts), so what a reader sees is always a durable prefix.
import type Database from 'better-sqlite3';
import { BLOB_CHUNK_BYTES, type BlobName, type StoredBlob } from '../../blobs/event-blob.js';
import { type EventFilter, SCAN_BYTES, SCAN_EVENTS } from '../../domain/event-filter.js';
import type { EventPageRecord, EventRecord, ScanPageRecord } from '../../domain/model.js';
import { filterSql, type ScanRow, SqlParams, scanPage, scanSql } from '../event-filter-sql.js';
import { cutPage, toEvent } from '../rows.js';
import { jsonBytesSql } from '../stored-bytes-sql.js';
import type { SqliteParts } from './sqlite-statements.js';

/** Prepared statements of filtered scans kept (each filter shape is one). */
const SCAN_STATEMENTS = 64;

export class SqliteReads {
  /** Prepared filtered scans by their SQL (one per filter shape), oldest first. */
  private readonly scanStatements = new Map<string, Database.Statement<unknown[], ScanRow>>();

  constructor(private readonly s: SqliteParts) {}

  listEvents(addressId: string, after: number, limit: number, maxBytes: number): EventPageRecord | null {
    const { cache, db, q, visibility } = this.s;
    cache.checkExternalChanges();
    const key = `${after}:${limit}:${maxBytes}`;
    const cached = cache.page(addressId, key);
    if (cached) return cached;
    const page = db.transaction((): EventPageRecord | null => {
      if (!q.addressExists.get(addressId)) return null;
      const visibleBelow = visibility.visibleBelow(addressId);
      const { rows, hasMore } = cutPage(q.page.all(addressId, after, visibleBelow, limit + 1, maxBytes), limit);
      return Object.freeze({ events: Object.freeze(rows.map((r) => Object.freeze(toEvent(r)))) as EventRecord[], hasMore });
    })();
    if (!page) return null;
    cache.rememberPage(addressId, key, page);
    return page;
  }

  /**
   * A filtered read (event-filter-sql.ts), not cached: statements are prepared per filter shape and
   * kept in a small map, since a consumer polling with one filter asks the same shape again.
   */
  scanEvents(addressId: string, after: number, filter: EventFilter, limit: number, maxBytes: number): ScanPageRecord | null {
    const p = new SqlParams('sqlite');
    const visibleBelow = this.s.visibility.visibleBelow(addressId);
    const sql = scanSql({
      address: p.add(addressId),
      after: p.add(after),
      below: p.add(visibleBelow),
      scanEvents: SCAN_EVENTS,
      scanBytes: SCAN_BYTES,
      limit: p.add(limit + 1),
      budget: p.add(maxBytes),
      bytes: jsonBytesSql('sqlite'),
      filter: filterSql(filter, p),
      dataJson: null,
    });
    let stmt = this.scanStatements.get(sql);
    if (stmt === undefined) {
      if (this.scanStatements.size >= SCAN_STATEMENTS) this.scanStatements.delete(this.scanStatements.keys().next().value as string);
      stmt = this.s.db.prepare<unknown[], ScanRow>(sql);
      this.scanStatements.set(sql, stmt);
    }
    return scanPage(stmt.all(...p.bound()), after, limit);
  }

  openBlob(addressId: string, eventId: string, name: BlobName): StoredBlob | null {
    const { q } = this.s;
    const b = q.blob.get(eventId, eventId, addressId, name);
    // An event not yet durable is not visible (event-visibility.ts), nor are its bytes.
    if (!b || b.sequence >= this.s.visibility.visibleBelow(addressId)) return null;
    return {
      contentType: b.content_type,
      size: b.size,
      sha256: b.sha256,
      async *chunks() {
        // One chunk per turn of the event loop, each a bounded read: a download never holds the blob whole.
        for (let offset = 0; offset < b.size; offset += BLOB_CHUNK_BYTES) {
          const row = q.blobChunk.get(offset + 1, BLOB_CHUNK_BYTES, addressId, b.sequence, name);
          if (!row) throw new Error('the blob was deleted while it was being read');
          yield row.chunk;
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
      },
    };
  }
}
