// Group commit for the PostgreSQL store: appends submitted while a batch is being committed wait
// and go together in the next one, so one commit flush serves many deliveries.
//
// States: idle -> scheduled (items pending, a flush queued with setImmediate so that every request
// of the current I/O phase joins) -> committing (one batch in flight; new items wait) -> back to
// scheduled or idle. Callers are answered only after their batch's COMMIT returned. A batch that
// the database refused with an SQL error (e.g. the unique-index backstop fired) was rolled back
// whole, and is retried item by item, so one bad item cannot fail its neighbours. Any other failure
// (a connection lost around COMMIT) leaves the outcome unknown: it is reported, never retried here,
// since a retry could store an event twice.

/** How a batch is bounded: by count, by bytes, and which items are too large to share one. */
export interface BatchLimits<I> {
  maxBatch: number;
  /** A batch stops before the item that would take its bytes past this (it always holds one item). */
  maxBatchBytes: number;
  /**
   * An item of at least this many bytes is committed alone: a batch passes its payloads as TEXT[]
   * parameters, and PostgreSQL parses an array literal of megabytes of escaped quotes in seconds
   * and gigabytes, where the same text as a scalar parameter costs a copy.
   */
  aloneFromBytes: number;
  sizeOf: (input: I) => number;
}

interface Pending<I, O> {
  input: I;
  resolve: (value: O) => void;
  reject: (error: unknown) => void;
}

export class AppendBatcher<I, O> {
  private pending: Pending<I, O>[] = [];
  private state: 'idle' | 'scheduled' | 'committing' = 'idle';
  private drained: (() => void)[] = [];

  constructor(
    private readonly commitBatch: (inputs: I[]) => Promise<O[]>,
    private readonly commitOne: (input: I) => Promise<O>,
    private readonly limits: BatchLimits<I>,
  ) {}

  submit(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ input, resolve, reject });
      if (this.state === 'idle') {
        this.state = 'scheduled';
        setImmediate(() => void this.flush());
      }
    });
  }

  /** Resolves once nothing is pending or committing (shutdown, before the pool ends). */
  whenIdle(): Promise<void> {
    if (this.state === 'idle') return Promise.resolve();
    return new Promise((resolve) => this.drained.push(resolve));
  }

  /** The next batch, in arrival order: up to maxBatch items and maxBatchBytes, a large item alone. */
  private takeBatch(): Pending<I, O>[] {
    const { maxBatch, maxBatchBytes, aloneFromBytes, sizeOf } = this.limits;
    let n = 0;
    let bytes = 0;
    while (n < this.pending.length && n < maxBatch) {
      const size = sizeOf(this.pending[n]!.input);
      if (n > 0 && (size >= aloneFromBytes || bytes + size > maxBatchBytes)) break;
      n++;
      bytes += size;
      if (size >= aloneFromBytes) break;
    }
    return this.pending.splice(0, n);
  }

  private async flush(): Promise<void> {
    this.state = 'committing';
    const batch = this.takeBatch();
    if (batch.length === 1) {
      await this.commitOne(batch[0]!.input).then(batch[0]!.resolve, batch[0]!.reject);
    } else {
      try {
        const outcomes = await this.commitBatch(batch.map((p) => p.input));
        batch.forEach((p, i) => {
          p.resolve(outcomes[i]!);
        });
      } catch (err) {
        if (isSqlError(err)) {
          for (const p of batch) await this.commitOne(p.input).then(p.resolve, p.reject);
        } else {
          for (const p of batch) p.reject(err);
        }
      }
    }
    if (this.pending.length > 0) {
      setImmediate(() => void this.flush());
      return;
    }
    this.state = 'idle';
    for (const d of this.drained.splice(0)) d();
  }
}

/** An error PostgreSQL answered with (SQLSTATE); the transaction was rolled back, nothing committed. */
function isSqlError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !code.startsWith('08') && !code.startsWith('57');
}
