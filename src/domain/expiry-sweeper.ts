// Deletes addresses past expiresAt + grace on a timer. Safe to run on every instance: each sweep
// deletes what it finds, and the stores make concurrent sweeps harmless (SQLite has one writer;
// PostgreSQL skips rows another sweeper holds). With RETAIN_ACKED_SECONDS it also deletes old
// acknowledged events, in batches that each hold the write lock briefly (sweepAcknowledged).
import type { Log } from './ports.js';
import type { ReturnAddressService } from './return-address-service.js';

/** Other work on the same timer, before the addresses' deletion (approvals' expiry); resolves to how much it did. */
export interface Sweep {
  readonly name: string;
  run(): Promise<number>;
}

export class ExpirySweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly service: ReturnAddressService,
    private readonly intervalMs: number,
    private readonly log: Log,
    private readonly sweeps: readonly Sweep[] = [],
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.sweepOnce(), this.intervalMs);
    this.timer.unref();
    void this.sweepOnce();
  }

  sweepOnce(): Promise<void> {
    this.running ??= this.runSweeps()
      .then(() => this.service.sweepExpired())
      .then((n) => {
        if (n > 0) this.log.info({ deleted: n }, 'swept expired addresses');
      })
      .then(() => this.service.sweepAcknowledged())
      .then((n) => {
        if (n > 0) this.log.info({ deleted: n }, 'deleted acknowledged events past RETAIN_ACKED_SECONDS');
      })
      .catch((err: unknown) => {
        this.log.error({ err }, 'expiry sweep failed');
      })
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }

  /** Each sweep on its own: one that fails is logged and does not keep the others (or the deletion) from running. */
  private async runSweeps(): Promise<void> {
    for (const sweep of this.sweeps) {
      try {
        const n = await sweep.run();
        if (n > 0) this.log.info({ sweep: sweep.name, count: n }, 'sweep done');
      } catch (err) {
        this.log.error({ err, sweep: sweep.name }, 'sweep failed');
      }
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
