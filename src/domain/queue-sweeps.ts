// The queue's deletions on a timer (design.md, "The queue"): addresses past their grace period, and
// acknowledged events past RETAIN_ACKED_SECONDS, each in bounded batches. expiry-sweeper.ts runs them;
// a part of ReturnAddressService.
import type { Store, WakeupHub } from './ports.js';

export interface SweepOptions {
  expiredGraceSeconds: number;
  /** RETAIN_ACKED_SECONDS: acknowledged events are deleted this long after their ack. */
  retainAckedSeconds?: number | undefined;
}

export class QueueSweeps {
  constructor(
    private readonly store: Store,
    private readonly hub: WakeupHub,
    private readonly opts: SweepOptions,
    private readonly now: () => number,
  ) {}

  /** Deletes addresses past expiresAt + grace, with their events; ends their waiting reads. */
  async sweepExpired(batchSize = 500): Promise<number> {
    const cutoff = this.now() - this.opts.expiredGraceSeconds * 1000;
    let total = 0;
    for (;;) {
      const ids = await this.store.deleteExpired(cutoff, batchSize);
      for (const id of ids) this.hub.notify(id);
      total += ids.length;
      if (ids.length < batchSize) return total;
    }
  }

  /**
   * Retention by age (RETAIN_ACKED_SECONDS): deletes events acknowledged before now − retention, in
   * batches of `batchSize`, each its own short transaction. Between batches it pauses as long as the
   * batch took, so the deletion never takes more than half of the store's (and, on SQLite, the event
   * loop's) time from deliveries: a large backlog takes longer, deliveries keep their latency.
   * Returns how many events were deleted.
   */
  async sweepAcknowledged(batchSize = 200): Promise<number> {
    const retain = this.opts.retainAckedSeconds;
    if (retain === undefined) return 0;
    const cutoff = this.now() - retain * 1000;
    let total = 0;
    for (;;) {
      const started = performance.now();
      const deleted = await this.store.deleteAcknowledgedBefore(cutoff, batchSize);
      total += deleted;
      if (deleted < batchSize) break;
      await new Promise<void>((resolve) => setTimeout(resolve, Math.max(1, performance.now() - started)));
    }
    if (total > 0) await this.store.reclaimSpace();
    return total;
  }
}
