// Group commit: writes submitted while the event loop is busy are gathered and written in one
// transaction, and one fsync makes a whole burst durable instead of one fsync per request.
//
// Pipeline (each stage strictly ordered):
//   pending  -- submitted, not yet written. One flush is scheduled with setImmediate, which runs
//               after the current I/O phase has handed over every request that was ready.
//   written  -- the batch's transaction has committed (synchronously, without waiting for the
//               disk); its outcomes wait for a sync that starts after this commit.
//   syncing  -- one `sync` (fdatasync of the log, off the event loop) is in flight for a cohort
//               of written batches; batches written meanwhile wait for the next sync.
// A caller's promise resolves only after a sync that started after its commit has completed, so
// it never resolves before its write is on disk. While the disk is busy the event loop keeps
// parsing requests and writing the next batches, which is what lets throughput approach the HTTP
// ceiling. Without a `sync` (a store that commits durably by itself), outcomes resolve at commit.
// A batch is all-or-nothing at the transaction level, while `commit` isolates items from each
// other (one item's error does not fail its neighbours). A failed sync fails its whole cohort and
// every later write: after a failed fsync, the kernel may have dropped the dirty pages, and a later
// successful fsync would prove nothing.

export type ItemOutcome<O> = { ok: true; value: O } | { ok: false; error: unknown };

interface Pending<I, O> {
  input: I;
  resolve: (value: O) => void;
  reject: (error: unknown) => void;
}

/** A committed batch, or a barrier, waiting for its sync. */
type Written<I, O> =
  | { kind: 'batch'; batch: Pending<I, O>[]; outcomes: ItemOutcome<O>[] }
  | { kind: 'barrier'; resolve: () => void; reject: (error: unknown) => void };

export interface Durability<I, O> {
  /** Makes everything committed before the call durable (e.g. fdatasync of the WAL), off the event loop. */
  sync(done: (error: Error | null) => void): void;
  /**
   * How many syncs may run at once (default 1). More than one lets a batch start its sync without
   * waiting for the previous one to end, which shortens waits when each sync is slow.
   */
  maxConcurrentSyncs?: number;
  /** Called once a batch is durable, before its callers are answered (e.g. to make its rows visible). */
  onDurable?(inputs: readonly I[], outcomes: readonly ItemOutcome<O>[]): void;
}

export class GroupCommit<I, O> {
  private pending: Pending<I, O>[] = [];
  private scheduled = false;
  private written: Written<I, O>[] = [];
  /** Syncs in flight, oldest first, each with the cohort it makes durable. */
  private inflight: { cohort: Written<I, O>[] }[] = [];
  private failed: Error | undefined;
  /** Commits made so far and the largest batch, for the debug log and tests. */
  readonly stats = { batches: 0, items: 0, largestBatch: 0, syncs: 0, commitMs: 0, maxCommitMs: 0, syncMs: 0, maxSyncMs: 0 };

  /**
   * @param commit writes all inputs in one transaction and returns one outcome per input, in
   *   order. If it throws, the whole batch failed and every caller gets the error.
   * @param durability how committed batches are made durable; without it, `commit` must be durable itself.
   */
  constructor(
    private readonly commit: (inputs: readonly I[]) => ItemOutcome<O>[],
    private readonly maxBatch = 1000,
    private readonly durability?: Durability<I, O>,
  ) {}

  submit(input: I): Promise<O> {
    if (this.failed) return Promise.reject(this.failed);
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ input, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.flush);
      }
    });
  }

  /**
   * Resolves once everything committed before this call is durable: for writes made outside the
   * batches (on the same database) that must not be answered before they are on disk.
   */
  barrier(): Promise<void> {
    if (!this.durability) return Promise.resolve();
    if (this.failed) return Promise.reject(this.failed);
    return new Promise<void>((resolve, reject) => {
      this.written.push({ kind: 'barrier', resolve, reject });
      this.startSync();
    });
  }

  /** The error of a failed sync: every write since fails with it. */
  get failure(): Error | undefined {
    return this.failed;
  }

  /** True while writes are pending, committed-but-not-durable, or syncing. */
  busy(): boolean {
    return this.pending.length > 0 || this.written.length > 0 || this.inflight.length > 0;
  }

  /**
   * Commits everything pending now (used on shutdown, before the database closes); with a
   * `durability`, follow with `barrier()` to wait until it is on disk and answered.
   */
  drain(): void {
    while (this.pending.length > 0) this.flushOnce();
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    this.flushOnce();
    if (this.pending.length > 0 && !this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  };

  private flushOnce(): void {
    const batch = this.pending.length <= this.maxBatch ? this.pending : this.pending.slice(0, this.maxBatch);
    this.pending = this.pending.length <= this.maxBatch ? [] : this.pending.slice(this.maxBatch);
    if (batch.length === 0) return;
    if (this.failed) {
      for (const p of batch) p.reject(this.failed);
      return;
    }
    let outcomes: ItemOutcome<O>[];
    const t0 = performance.now();
    try {
      outcomes = this.commit(batch.map((p) => p.input));
    } catch (error) {
      for (const p of batch) p.reject(error);
      return;
    }
    const ms = performance.now() - t0;
    this.stats.commitMs += ms;
    if (ms > this.stats.maxCommitMs) this.stats.maxCommitMs = ms;
    this.stats.batches++;
    this.stats.items += batch.length;
    if (batch.length > this.stats.largestBatch) this.stats.largestBatch = batch.length;
    if (!this.durability) {
      this.settle([{ kind: 'batch', batch, outcomes }], null);
      return;
    }
    this.written.push({ kind: 'batch', batch, outcomes });
    this.startSync();
  }

  /**
   * Starts a sync for everything written so far, unless `maxConcurrentSyncs` are in flight (then
   * the next one starts when one ends). When a sync ends, every cohort up to its own was written
   * before it started, so all of them are durable: cohorts are always settled in commit order.
   */
  private startSync(): void {
    const durability = this.durability;
    if (!durability || this.written.length === 0 || this.inflight.length >= (durability.maxConcurrentSyncs ?? 1)) return;
    const entry = { cohort: this.written };
    this.written = [];
    this.inflight.push(entry);
    this.stats.syncs++;
    const t0 = performance.now();
    durability.sync((error) => {
      const ms = performance.now() - t0;
      this.stats.syncMs += ms;
      if (ms > this.stats.maxSyncMs) this.stats.maxSyncMs = ms;
      if (error) this.failed ??= error;
      const i = this.inflight.indexOf(entry);
      if (i >= 0) for (const done of this.inflight.splice(0, i + 1)) this.settle(done.cohort, this.failed ?? null);
      if (this.failed) {
        const rest = this.written;
        this.written = [];
        this.settle(rest, this.failed);
      } else {
        this.startSync();
      }
    });
  }

  private settle(cohort: Written<I, O>[], error: Error | null): void {
    for (const w of cohort) {
      if (w.kind === 'barrier') {
        if (error) w.reject(error);
        else w.resolve();
        continue;
      }
      const { batch, outcomes } = w;
      if (error) {
        for (const p of batch) p.reject(error);
        continue;
      }
      this.durability?.onDurable?.(batch.map((p) => p.input), outcomes);
      batch.forEach((p, i) => {
        const o = outcomes[i];
        if (o === undefined) p.reject(new Error('group commit returned fewer outcomes than inputs'));
        else if (o.ok) p.resolve(o.value);
        else p.reject(o.error);
      });
    }
  }
}
