// The push worker's Prometheus series (design.md, "Push subscriptions"), on the service's registry
// when METRICS_PORT is set: attempts by outcome, subscriptions paused (all instances: read from the
// store at scrape), subscriptions this instance delivers, the delivery lag (from an event being
// stored to its 2xx), and the lag in events: how many sequences the subscriptions this instance
// delivers are behind their address, the largest and the total (what the runners know: no query at
// scrape).
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { AttemptResult, PushObserver } from './push-runner.js';
import type { SubscriptionStore } from './subscription-store.js';

const RESULTS: AttemptResult[] = ['delivered', 'failed', 'timeout', 'refused', 'aborted'];

export class PushMetrics implements PushObserver {
  private readonly attempts: Counter<'outcome'>;
  private readonly lag: Histogram;

  constructor(registry: Registry, store: SubscriptionStore, active: () => number, lagEvents: () => { max: number; total: number }) {
    const registers = [registry];
    this.attempts = new Counter({
      name: 'return_address_push_attempts_total',
      help: 'Webhook delivery attempts by outcome: delivered (2xx), failed (another status or no connection), timeout, refused (a private target), aborted (webhook-delivery: abort).',
      labelNames: ['outcome'],
      registers,
    });
    for (const outcome of RESULTS) this.attempts.inc({ outcome }, 0);
    this.lag = new Histogram({
      name: 'return_address_push_lag_seconds',
      help: "From an event being stored to its webhook's 2xx: the delay a subscriber sees, retries included.",
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30, 300, 3600, 36_000, 100_000],
      registers,
    });
    new Gauge({
      name: 'return_address_push_subscriptions_paused',
      help: 'Webhook subscriptions paused (the schedule ran out or the receiver aborted), all instances together.',
      registers,
      async collect() {
        this.set(await store.countPausedSubscriptions());
      },
    });
    new Gauge({
      name: 'return_address_push_subscriptions_delivering',
      help: 'Webhook subscriptions this instance holds the lease of and delivers.',
      registers,
      collect() {
        this.set(active());
      },
    });
    new Gauge({
      name: 'return_address_push_lag_events',
      help: "Sequences the subscriptions this instance delivers are behind their address's last event (paused ones are not delivered: see _paused): aggregate=max, the largest; aggregate=total, their sum.",
      labelNames: ['aggregate'],
      registers,
      collect() {
        const lag = lagEvents();
        this.set({ aggregate: 'max' }, lag.max);
        this.set({ aggregate: 'total' }, lag.total);
      },
    });
  }

  attempt(result: AttemptResult): void {
    this.attempts.inc({ outcome: result });
  }

  delivered(lagMs: number): void {
    this.lag.observe(Math.max(0, lagMs) / 1000);
  }
}
