// Group commit: writes submitted while the event loop is busy are gathered and written in one
// transaction, and one fsync makes a whole burst durable instead of one fsync per request.
//
// An entry (a committed batch, or a barrier) moves pending -> written -> covered by a sync ->
// settled. The invariants, each checked by test/storage/group-commit-property.test.ts under
// random sync completion orders:
//   1. Durable before answered: a caller is answered only after a sync that STARTED after its
//      batch committed has ended. Each sync covers everything written before it started, so when
//      one ends, every entry it covers is durable, whatever order the syncs end in.
//   2. Answers follow commit order: entries settle oldest first; a later sync that ends first
//      settles everything it covers, earlier entries included.
//   3. Bounded syncs: at most `maxSyncsInFlight` run at once; while `quiet()` holds, at most one,
//      and nothing commits beside it (a checkpoint needs a sync no commit overlapped).
//   4. Isolation: one item's error fails only that item; a commit that throws fails its batch.
//   5. A failed sync is final: it fails every unanswered entry and every later write (after a
//      failed fsync the kernel may have dropped the dirty pages; a later success proves nothing).
// When to commit is the commit policy's choice (`QuietTurnPolicy`); how long commits and syncs
// take is an observer's concern (`GroupCommitStats`). Why two syncs in flight and why larger
// batches pay, with the measurements: bench/README.md, "Group commit".

export type ItemOutcome<O> = { ok: true; value: O } | { ok: false; error: unknown };

interface Pending<I, O> {
  input: I;
  resolve: (value: O) => void;
  reject: (error: unknown) => void;
}

/** A committed batch, or a barrier, waiting for a sync that started after it. */
type Written<I, O> =
  | { kind: 'batch'; batch: Pending<I, O>[]; outcomes: ItemOutcome<O>[] }
  | { kind: 'barrier'; resolve: () => void; reject: (error: unknown) => void };

/** Decides, at a flush that finds a sync in flight, whether to commit now or look again next turn. */
export interface CommitPolicy {
  deferCommit(syncsInFlight: number, submittedEver: number): boolean;
}

/**
 * Beside a sync in flight, commit only after a turn of the event loop in which nothing new was
 * submitted. The clients answered together by a sync come back over several turns; a commit
 * after the first of them would split their wave into small batches, which write more WAL pages
 * per delivery. When requests keep arriving every turn, the sync in flight ends first and its end
 * commits them. With no sync in flight there is nothing to wait for: commit at once.
 */
export class QuietTurnPolicy implements CommitPolicy {
  private submittedAtLastLook = 0;
  deferCommit(syncsInFlight: number, submittedEver: number): boolean {
    if (syncsInFlight === 0 || submittedEver === this.submittedAtLastLook) return false;
    this.submittedAtLastLook = submittedEver;
    return true;
  }
}

/** Commit at every flush: for tests that want one batch per turn. */
export const COMMIT_AT_ONCE: CommitPolicy = { deferCommit: () => false };

/** Told of each commit and each sync, for counters and debug logs; the group commit keeps none. */
export interface GroupCommitObserver {
  committed(items: number, ms: number): void;
  synced(ms: number, overlapped: boolean): void;
}

/** The counters RA_DEBUG_GROUP_COMMIT logs, and tests read. */
export class GroupCommitStats implements GroupCommitObserver {
  batches = 0;
  items = 0;
  largestBatch = 0;
  syncs = 0;
  overlappedSyncs = 0;
  commitMs = 0;
  maxCommitMs = 0;
  syncMs = 0;
  maxSyncMs = 0;
  committed(items: number, ms: number): void {
    this.batches++;
    this.items += items;
    this.largestBatch = Math.max(this.largestBatch, items);
    this.commitMs += ms;
    this.maxCommitMs = Math.max(this.maxCommitMs, ms);
  }
  synced(ms: number, overlapped: boolean): void {
    this.syncs++;
    if (overlapped) this.overlappedSyncs++;
    this.syncMs += ms;
    this.maxSyncMs = Math.max(this.maxSyncMs, ms);
  }
}

export interface GroupCommitOptions<I, O> {
  /** Most items in one transaction; default 1000. */
  maxBatch?: number;
  /** How committed batches are made durable; without it, `commit` must be durable itself. */
  durability?: Durability<I, O>;
  /** Default: a `QuietTurnPolicy`. */
  policy?: CommitPolicy;
  observer?: GroupCommitObserver;
}

export interface Durability<I, O> {
  /**
   * Makes everything committed before the call durable (e.g. fdatasync of the WAL), off the event
   * loop. Up to `maxSyncsInFlight` calls may be in flight at once; each must report every write
   * error of the file since the previous call that it overlaps no longer (for fdatasync: a file
   * descriptor of its own, see sqlite-durability.ts).
   */
  sync(done: (error: Error | null) => void): void;
  /** Called once a batch is durable, before its callers are answered (e.g. to make its rows visible). */
  onDurable?(inputs: readonly I[], outcomes: readonly ItemOutcome<O>[]): void;
  /** Syncs allowed in flight at once; default 1. */
  maxSyncsInFlight?: number;
  /**
   * While it returns true, nothing is committed while a sync is in flight, and syncs run one at a
   * time: for a checkpoint that needs a sync no commit overlapped (checkpointer.ts). Asked at
   * every flush and sync start.
   */
  quiet?(): boolean;
}

export class GroupCommit<I, O> {
  private pending: Pending<I, O>[] = [];
  private scheduled = false;
  /** Committed, not yet answered, oldest first; `written[0]` has the number `settledCount`. */
  private written: Written<I, O>[] = [];
  /** Entries ever settled (answered or failed): entry n is durable once a sync started after it ends. */
  private settledCount = 0;
  /** Entries before this number are covered by a sync already started. */
  private coveredCount = 0;
  private inFlight = 0;
  private noSyncWaiters: (() => void)[] = [];
  /** Submissions ever, for the commit policy. */
  private submitted = 0;
  private failed: Error | undefined;
  private readonly maxInFlight: number;
  private readonly maxBatch: number;
  private readonly durability: Durability<I, O> | undefined;
  private readonly policy: CommitPolicy;
  private readonly observer: GroupCommitObserver | undefined;

  /**
   * @param commit writes all inputs in one transaction and returns one outcome per input, in
   *   order. If it throws, the whole batch failed and every caller gets the error.
   */
  constructor(
    private readonly commit: (inputs: readonly I[]) => ItemOutcome<O>[],
    opts: GroupCommitOptions<I, O> = {},
  ) {
    this.maxBatch = opts.maxBatch ?? 1000;
    this.durability = opts.durability;
    this.policy = opts.policy ?? new QuietTurnPolicy();
    this.observer = opts.observer;
    this.maxInFlight = Math.max(1, this.durability?.maxSyncsInFlight ?? 1);
  }

  submit(input: I): Promise<O> {
    if (this.failed) return Promise.reject(this.failed);
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ input, resolve, reject });
      this.submitted++;
      this.scheduleFlush();
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

  /**
   * Resolves once no sync is in flight: before the file it syncs is closed. A sync that began
   * before a barrier may end after it.
   */
  whenNoSyncInFlight(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.noSyncWaiters.push(resolve));
  }

  /** True while writes are pending, committed-but-not-durable, or syncing. */
  busy(): boolean {
    return this.pending.length > 0 || this.written.length > 0 || this.inFlight > 0;
  }

  /**
   * Commits everything pending now (used on shutdown, before the database closes); with a
   * `durability`, follow with `barrier()` to wait until it is on disk and answered.
   */
  drain(): void {
    while (this.pending.length > 0) this.flushOnce();
  }

  /** No further sync may start now: one runs while the durability asks for quiet, or the maximum run. */
  private saturated(): boolean {
    return this.inFlight > 0 && (this.inFlight >= this.maxInFlight || this.durability?.quiet?.() === true);
  }

  /** A flush at the end of this turn, unless no sync could start after it (a sync's end schedules one). */
  private scheduleFlush(): void {
    if (this.scheduled || this.pending.length === 0 || this.saturated()) return;
    this.scheduled = true;
    setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    // A barrier may have taken the last free sync since this flush was scheduled: a sync's end commits.
    if (this.saturated()) return;
    if (this.policy.deferCommit(this.inFlight, this.submitted)) {
      this.scheduled = true;
      setImmediate(this.flush);
      return;
    }
    this.flushOnce();
    this.scheduleFlush();
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
    const t0 = this.observer ? performance.now() : 0;
    try {
      outcomes = this.commit(batch.map((p) => p.input));
    } catch (error) {
      for (const p of batch) p.reject(error);
      return;
    }
    this.observer?.committed(batch.length, performance.now() - t0);
    if (!this.durability) {
      this.settle([{ kind: 'batch', batch, outcomes }], null);
      return;
    }
    this.written.push({ kind: 'batch', batch, outcomes });
    this.startSync();
  }

  /** Entries ever written. */
  private get writtenCount(): number {
    return this.settledCount + this.written.length;
  }

  /**
   * Starts a sync covering everything written so far, if anything is not covered yet and a sync
   * may start (otherwise the end of one in flight starts it).
   */
  private startSync(): void {
    const durability = this.durability;
    if (!durability || this.failed || this.coveredCount === this.writtenCount || this.saturated()) return;
    const covers = this.writtenCount;
    this.coveredCount = covers;
    this.inFlight++;
    const overlapped = this.inFlight > 1;
    const t0 = this.observer ? performance.now() : 0;
    durability.sync((error) => {
      this.observer?.synced(performance.now() - t0, overlapped);
      this.afterSync(covers, error);
      if (this.inFlight === 0 && this.noSyncWaiters.length > 0) {
        const waiters = this.noSyncWaiters;
        this.noSyncWaiters = [];
        for (const resolve of waiters) resolve();
      }
    });
  }

  /** A sync began when `covers` entries had been written, and has ended. */
  private afterSync(covers: number, error: Error | null): void {
    this.inFlight--;
    if (error) this.failed ??= error;
    if (this.failed) {
      // Nothing more is committed: what was written fails, and so does what is pending.
      const rest = this.written;
      this.settledCount += rest.length;
      this.written = [];
      this.settle(rest, this.failed);
      const pending = this.pending;
      this.pending = [];
      for (const p of pending) p.reject(this.failed);
      return;
    }
    // Everything written before this sync began is durable; a later sync may have ended first
    // and answered it already.
    if (covers > this.settledCount) {
      const durable = this.written.splice(0, covers - this.settledCount);
      this.settledCount = covers;
      this.settle(durable, null);
    }
    // What was written but not covered (barriers) starts the next sync now; what is pending is
    // committed at the end of this turn, and its commit starts the sync after.
    this.startSync();
    this.scheduleFlush();
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
      this.durability?.onDurable?.(
        batch.map((p) => p.input),
        outcomes,
      );
      batch.forEach((p, i) => {
        const o = outcomes[i];
        if (o === undefined) p.reject(new Error('group commit returned fewer outcomes than inputs'));
        else if (o.ok) p.resolve(o.value);
        else p.reject(o.error);
      });
    }
  }
}
