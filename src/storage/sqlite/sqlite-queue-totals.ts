// The queue's totals for /metrics (Store.queueTotals): read at scrape time, so each is index-only,
// bounded work (docs/design.md, "Bounded work"; src/metrics/README.md).
import type Database from 'better-sqlite3';

export interface QueueTotals {
  stored: number;
  unacknowledged: number;
  oldestUnacknowledgedAt: number | null;
}

export class SqliteQueueTotals {
  private readonly storedEvents: Database.Statement<[], number>;
  private readonly unacknowledged: Database.Statement<[number], number>;
  private readonly oldestUnacknowledged: Database.Statement<[], number | null>;

  constructor(db: Database.Database) {
    this.storedEvents = db.prepare<[], number>('SELECT ifnull(sum(event_count), 0) FROM addresses').pluck();
    // Counted up to countCap: a deep backlog costs no more than the cap.
    this.unacknowledged = db.prepare<[number], number>('SELECT count(*) FROM (SELECT 1 FROM events WHERE acknowledged_at IS NULL LIMIT ?)').pluck();
    this.oldestUnacknowledged = db.prepare<[], number | null>('SELECT min(created_at) FROM events WHERE acknowledged_at IS NULL').pluck();
  }

  read(countCap: number): QueueTotals {
    return {
      stored: this.storedEvents.get() as number,
      unacknowledged: this.unacknowledged.get(countCap) as number,
      oldestUnacknowledgedAt: this.oldestUnacknowledged.get() ?? null,
    };
  }
}
