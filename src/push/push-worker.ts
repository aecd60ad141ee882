// The push worker (design.md, "Push subscriptions"): delivers the subscriptions this instance holds
// the lease of, one PushRunner each. A sweep every PUSH_SWEEP_MS renews those leases, takes free or
// expired ones (another instance died: taken over once its lease ran out, PUSH_LEASE_MS), drops
// runners whose subscription was deleted, paused or lost, and deletes expired subscriptions.
// New events wake runners through the wakeup hub, so the sweep is a safety net, not a poll per
// subscription. Attempts in flight are bounded per instance (PUSH_CONCURRENCY), each in time, over
// the instance's kept-alive connections to receivers (WebhookAgents), closed when the worker stops.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { PushConfig } from '../config.js';
import type { Log, WakeupHub } from '../domain/ports.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';
import type { DeliveryControl } from './delivery-control.js';
import { type PushObserver, PushRunner } from './push-runner.js';
import type { PushStore } from './subscription-store.js';
import type { Subscriptions } from './subscriptions.js';
import { WebhookAgents } from './webhook-post.js';

export const NO_PUSH_OBSERVER: PushObserver = { attempt() {}, delivered() {} };

export interface PushWorkerDeps {
  service: ReturnAddressService;
  store: PushStore;
  subscriptions: Subscriptions;
  hub: WakeupHub;
  config: PushConfig;
  baseUrl: string;
  log: Log;
  observer?: PushObserver;
  now?: () => number;
  /** Control bodies (MCP subscriptions: gap, terminated). */
  control?: DeliveryControl | undefined;
}

export class PushWorker {
  /** This instance's name in leases: unique per process start. */
  readonly owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private readonly runners = new Map<string, PushRunner>();
  /** Runners whose loop or terminated body is not over yet (shutdown stops and awaits them). */
  private readonly live = new Set<PushRunner>();
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private again = false;
  /**
   * Runners that ended since the sweep under way read its rows: those rows predate the end (a row
   * read before its address was deleted), so the sweep does not start them again; the next one does
   * if the row is still there. Else a subscription whose address went was told so twice.
   */
  private readonly endedSinceLease = new Set<string>();
  private stopped = false;
  private inFlight = 0;
  private readonly queue: (() => void)[] = [];
  private readonly agents = new WebhookAgents();
  /** Told of every attempt (push-metrics.ts when METRICS_PORT is set). */
  observer: PushObserver;

  constructor(private readonly d: PushWorkerDeps) {
    this.observer = d.observer ?? NO_PUSH_OBSERVER;
    d.subscriptions.onChange = (addressId) => this.changed(addressId);
  }

  start(): void {
    this.sweepSoon();
    this.timer = setInterval(() => this.sweepSoon(), this.d.config.sweepMs);
    this.timer.unref();
  }

  /** Subscriptions this instance delivers now. */
  get active(): number {
    return this.runners.size;
  }

  /** Runners whose loop or terminated body is not over yet: `active` plus those still telling a subscription it ended. */
  get running(): number {
    return this.live.size;
  }

  /** How far behind the subscriptions this instance delivers are, in sequences: the largest and the sum (no query: what the runners know). */
  lagEvents(): { max: number; total: number } {
    let max = 0;
    let total = 0;
    for (const runner of this.runners.values()) {
      const lag = runner.lag.events;
      if (lag > max) max = lag;
      total += lag;
    }
    return { max, total };
  }

  /** A subscription of the address was created, refreshed, resumed or deleted: its runner looks again, the sweep takes up new ones. */
  changed(addressId: string): void {
    for (const [key, runner] of this.runners) if (key.startsWith(`${addressId}/`)) runner.update();
    this.sweepSoon();
  }

  /** A sweep now, or right after the one under way (a create, resume or delete happened). */
  sweepSoon(): void {
    if (this.stopped) return;
    if (this.sweeping) {
      this.again = true;
      return;
    }
    this.sweeping = this.sweep()
      .catch((err: unknown) => this.d.log.warn({ err }, 'push sweep failed; the next one retries'))
      .finally(() => {
        this.sweeping = undefined;
        if (this.again) {
          this.again = false;
          this.sweepSoon();
        }
      });
  }

  private async sweep(): Promise<void> {
    const now = (this.d.now ?? Date.now)();
    const store = this.d.subscriptions.subscriptions;
    await store.deleteExpiredSubscriptions(now);
    this.endedSinceLease.clear();
    const held = await store.leaseSubscriptions(this.owner, now, this.d.config.leaseMs, this.d.config.maxPerInstance);
    if (this.stopped) return;
    const keep = new Set<string>();
    for (const record of held) {
      const key = `${record.addressId}/${record.id}`;
      keep.add(key);
      if (this.runners.has(key) || this.endedSinceLease.has(key)) continue;
      const runner = new PushRunner(record, {
        service: this.d.service,
        store: this.d.store,
        subscriptions: store,
        hub: this.d.hub,
        config: this.d.config,
        seal: this.d.subscriptions.seal,
        resolve: this.d.subscriptions.resolve,
        baseUrl: this.d.baseUrl,
        owner: this.owner,
        slot: () => this.slot(),
        observer: this.observer,
        log: this.d.log,
        now: this.d.now ?? Date.now,
        agents: this.agents,
        ...(this.d.store.epochs ? { lastSequence: (id: string) => this.d.store.epochs!.lastSequence(id) } : {}),
        control: this.d.control,
      });
      this.runners.set(key, runner);
      this.live.add(runner);
      void runner.ended.then(() => this.live.delete(runner));
      void runner.done.then(() => {
        if (this.runners.get(key) !== runner) return;
        this.runners.delete(key);
        if (this.sweeping) this.endedSinceLease.add(key);
      });
    }
    this.endedSinceLease.clear();
    // Deleted, paused by a resume elsewhere, expired, or leased by another instance: stop here.
    for (const [key, runner] of this.runners) if (!keep.has(key)) runner.stop(true);
  }

  private slot(): Promise<() => void> {
    const free = () => {
      this.inFlight--;
      this.queue.shift()?.();
    };
    if (this.inFlight < this.d.config.concurrency) {
      this.inFlight++;
      return Promise.resolve(free);
    }
    return new Promise((resolve) =>
      this.queue.push(() => {
        this.inFlight++;
        resolve(free);
      }),
    );
  }

  /** Stops every runner (an attempt under way ends with the process: its event is sent again later) and gives up the leases. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.sweeping;
    for (const runner of this.live) runner.stop();
    await Promise.all([...this.live].map((r) => r.ended));
    this.agents.destroy();
    await this.d.subscriptions.subscriptions.releaseLeases(this.owner).catch(() => {});
  }
}
