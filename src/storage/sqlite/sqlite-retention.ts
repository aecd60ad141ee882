// The SQLite store's retention: acknowledged events deleted in short batches with each address's
// counters kept exact (sqlite-queue-counters.ts), and the freed pages given back to the file system
// by a bounded incremental vacuum (design.md, "Bounded work").
import type { QueueCounters } from './sqlite-queue-counters.js';
import type { SqliteParts } from './sqlite-statements.js';

/** Pages an incremental vacuum gives back per step (1 MiB of 4 KiB pages): a few ms of write lock each. */
const VACUUM_STEP_PAGES = 256;

export class SqliteRetention {
  constructor(
    private readonly s: SqliteParts,
    private readonly path: string,
  ) {}

  async deleteAcknowledgedBefore(cutoff: number, batchSize: number): Promise<number> {
    const { db, q, counters } = this.s;
    const perAddress = db
      .transaction(() => {
        // A deletion writes the address's counters in its own transaction (sqlite-queue-counters.ts),
        // from counters loaded before it: loading them after would recount the address's events
        // above its row without the ones just deleted, and subtract those twice.
        const due = q.acknowledgedDue.all(cutoff, batchSize);
        const before = new Map<string, QueueCounters | null>();
        for (const { address_id } of due) if (!before.has(address_id)) before.set(address_id, counters.load(address_id));
        const per = new Map<string, { n: number; bytes: number }>();
        for (const { rowid } of due) {
          const row = q.deleteEventRow.get(rowid);
          if (!row) continue;
          const p = per.get(row.address_id);
          if (p) {
            p.n++;
            p.bytes += row.bytes;
          } else per.set(row.address_id, { n: 1, bytes: row.bytes });
        }
        const after = new Map<string, QueueCounters>();
        for (const [id, p] of per) {
          const c = before.get(id);
          if (!c) continue;
          c.eventCount -= p.n;
          c.eventBytes -= p.bytes;
          counters.persist(id, c);
          after.set(id, c);
        }
        return { per, after };
      })
      .immediate();
    let deleted = 0;
    for (const [id, c] of perAddress.after) counters.persisted(id, c);
    for (const [id, p] of perAddress.per) {
      this.s.forget(id);
      deleted += p.n;
    }
    if (deleted > 0) await this.s.durable();
    return deleted;
  }

  /**
   * Gives free pages back to the file system in steps of VACUUM_STEP_PAGES, pausing after each step
   * as long as it took (incremental vacuum: each step is one short write transaction on the event
   * loop, where a full VACUUM would lock the database for as long as it copies it, and need as much
   * free disk again). A no-op on a file made before auto_vacuum was set.
   */
  async reclaimSpace(): Promise<void> {
    if (this.path === ':memory:') return;
    const { db, q } = this.s;
    for (let free = q.freePages.get() as number; free > 0 && !this.s.isClosed(); free = q.freePages.get() as number) {
      const before = free;
      const started = performance.now();
      db.pragma(`incremental_vacuum(${VACUUM_STEP_PAGES})`);
      const took = performance.now() - started;
      await this.s.durable();
      if ((q.freePages.get() as number) >= before) return; // auto_vacuum is off on this file
      await new Promise<void>((resolve) => setTimeout(resolve, Math.max(1, took)));
    }
  }
}
