// Each address's queue counters (the last sequence given, the events and bytes stored), held in
// memory by the one writer and written to the address's row lazily (design.md, "Queue counters in
// memory"). Writing them in every commit changed one page of the addresses table per address the
// commit touched; now an append commit writes none of them, except one commit a second, which
// writes every row that changed since (`writeDue`): inside a group commit, so the rows are made
// durable by its fdatasync and no commit of their own lands in the middle of a checkpoint.
//
// The invariant that makes a lazy row safe: the row's (last_sequence, event_count, event_bytes)
// always counts exactly the stored events whose sequence is at most its last_sequence. Appends
// only add events above it, so the true counters are the row plus the events above last_sequence,
// which `load` counts through the (address_id, sequence) index when an address is first touched:
// after a restart, a crash or an operator's write, that is at most the events of one flush
// interval. Every transaction that deletes events of an address (pruning, retention) writes its
// row in that same transaction (`persist`), so a deletion never breaks the invariant; an address
// that is deleted takes its row with it.
import type Database from 'better-sqlite3';

export interface QueueCounters {
  lastSequence: number;
  eventCount: number;
  /** Bytes of the stored events: their data and metadata as UTF-8, and the blobs beside them (MAX_BYTES_PER_ADDRESS). */
  eventBytes: number;
  /**
   * The address has been claimed from, so its open events are in the claims' index (migration
   * 0011): each event is inserted with claim_indexed = 1. Written to the row by the claim that set
   * it (sqlite-claims.ts), never by a flush.
   */
  claimsIndexed: boolean;
}

/** How often counters changed by appends are written to their rows, bounding what a restart recounts. */
const FLUSH_INTERVAL_MS = 1000;
/** Clean counters held at most; beyond it they are dropped after a flush and loaded again when needed. */
const MAX_HELD = 100_000;

export class SqliteQueueCounters {
  private readonly held = new Map<string, QueueCounters>();
  /** Addresses whose held counters are ahead of their row. */
  private readonly dirty = new Set<string>();
  private readonly reader: SqliteCountersReader;
  private readonly write: Database.Statement<[number, number, number, string]>;
  private readonly flushAll: () => void;
  private timer: NodeJS.Timeout | undefined;
  /** A flush interval has passed since the rows were last written: the next append commit writes them. */
  private due = false;

  constructor(
    private readonly db: Database.Database,
    /** SQL for the stored bytes of an event row (data, metadata and blob_bytes). */
    eventBytesSql: string,
  ) {
    this.reader = new SqliteCountersReader(db, eventBytesSql);
    this.write = db.prepare('UPDATE addresses SET last_sequence = ?, event_count = ?, event_bytes = ? WHERE id = ?');
    this.flushAll = db.transaction(() => {
      for (const id of this.dirty) {
        const c = this.held.get(id);
        if (c) this.write.run(c.lastSequence, c.eventCount, c.eventBytes, id);
      }
      this.dirty.clear();
    });
  }

  /**
   * Every FLUSH_INTERVAL_MS the dirty rows become due, and the next append commit writes them; if no
   * append came in a whole interval, the service is idle and they are written in a commit of their
   * own (unref'd: the timer never keeps the process alive).
   */
  start(): void {
    this.timer ??= setInterval(() => {
      if (this.due) this.flush();
      this.due = true;
    }, FLUSH_INTERVAL_MS).unref();
  }

  /**
   * At the start of an append commit's transaction: when due, writes every dirty row (the counters
   * as they stand before the commit's items run) and returns their ids for `written`.
   */
  writeDue(): string[] {
    if (!this.due || this.dirty.size === 0) return [];
    this.due = false;
    const ids = [...this.dirty];
    for (const id of ids) {
      const c = this.held.get(id);
      if (c) this.write.run(c.lastSequence, c.eventCount, c.eventBytes, id);
    }
    return ids;
  }

  /** After the commit that ran writeDue committed (before the commit's own counters are handed back). */
  written(ids: readonly string[]): void {
    for (const id of ids) this.dirty.delete(id);
  }

  /**
   * A copy of the address's counters, to advance in a transaction and hand back with `commit` or
   * `persist` once it succeeds; null when the address does not exist. Runs inside the writer's
   * transaction, so nothing can change between the read and the write.
   */
  load(addressId: string): QueueCounters | null {
    const held = this.held.get(addressId);
    if (held) return { ...held };
    const read = this.reader.read(addressId);
    if (!read) return null;
    const { rowBehind, ...c } = read;
    this.held.set(addressId, c);
    if (rowBehind) this.dirty.add(addressId);
    return { ...c };
  }

  /** After a transaction that only appended: the row may lag behind (see the invariant above). */
  commit(addressId: string, c: QueueCounters): void {
    this.held.set(addressId, c);
    this.dirty.add(addressId);
  }

  /** Inside a transaction that deleted events of the address: its row is written in that transaction. */
  persist(addressId: string, c: QueueCounters): void {
    this.write.run(c.lastSequence, c.eventCount, c.eventBytes, addressId);
  }

  /** After the transaction that called `persist` committed. */
  persisted(addressId: string, c: QueueCounters): void {
    this.held.set(addressId, c);
    this.dirty.delete(addressId);
  }

  /** Writes every dirty row in one transaction (periodically, before an external change is applied, at close). */
  flush(): void {
    this.due = false;
    if (this.dirty.size > 0 && this.db.open) this.flushAll();
    if (this.held.size > MAX_HELD && this.dirty.size === 0) this.held.clear();
  }

  /** After the claim that indexed the address's open events committed (its row says so already). */
  markClaimsIndexed(addressId: string): void {
    const c = this.held.get(addressId);
    if (c) c.claimsIndexed = true;
  }

  /** The address is deleted (its row with it). */
  forget(addressId: string): void {
    this.held.delete(addressId);
    this.dirty.delete(addressId);
  }

  /** Another process wrote (an operator's delete): flush ours, then load every address afresh. */
  reload(): void {
    this.flush();
    this.held.clear();
  }

  /** Before the connection closes: every row is written. */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.flush();
  }
}

/**
 * The true counters, by the invariant above: an address's row plus the events above its
 * last_sequence. Read without holding them, so the one rule serves the writer (`load`) and a reader
 * beside it (the operator's admin commands, sqlite-admin.ts), which must never write a row.
 */
export class SqliteCountersReader {
  private readonly row: Database.Statement<[string], { last_sequence: number; event_count: number; event_bytes: number; claims_indexed: number }>;
  private readonly above: Database.Statement<[string, number], { n: number; bytes: number; last: number | null }>;
  private readonly rowTotals: Database.Statement<[], { events: number; bytes: number }>;
  private readonly ahead: Database.Statement<[], { n: number; bytes: number }>;

  constructor(db: Database.Database, eventBytesSql: string) {
    this.row = db.prepare('SELECT last_sequence, event_count, event_bytes, claims_indexed FROM addresses WHERE id = ?');
    this.above = db.prepare(
      `SELECT count(*) AS n, ifnull(sum(${eventBytesSql}), 0) AS bytes, max(sequence) AS last FROM events WHERE address_id = ? AND sequence > ?`,
    );
    this.rowTotals = db.prepare('SELECT ifnull(sum(event_count), 0) AS events, ifnull(sum(event_bytes), 0) AS bytes FROM addresses');
    // Every address's events above its row, through the (address_id, sequence) index.
    this.ahead = db.prepare(
      `SELECT count(*) AS n, ifnull(sum(${eventBytesSql}), 0) AS bytes FROM addresses a JOIN events ON events.address_id = a.id AND events.sequence > a.last_sequence`,
    );
  }

  /** The address's counters; `rowBehind`: events above its row were counted. Null when the address does not exist. */
  read(addressId: string): (QueueCounters & { rowBehind: boolean }) | null {
    const r = this.row.get(addressId);
    if (!r) return null;
    const tail = this.above.get(addressId, r.last_sequence) as { n: number; bytes: number; last: number | null };
    return {
      lastSequence: Math.max(r.last_sequence, tail.last ?? 0),
      eventCount: r.event_count + tail.n,
      eventBytes: r.event_bytes + tail.bytes,
      claimsIndexed: r.claims_indexed === 1,
      rowBehind: tail.n > 0,
    };
  }

  /** Every address's events and bytes together, by the same rule. */
  totals(): { events: number; bytes: number } {
    const rows = this.rowTotals.get() as { events: number; bytes: number };
    const ahead = this.ahead.get() as { n: number; bytes: number };
    return { events: rows.events + ahead.n, bytes: rows.bytes + ahead.bytes };
  }
}
