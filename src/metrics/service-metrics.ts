// The service's Prometheus series (design.md, "Operating a public instance"), on a registry of its own per running service
// (two services in one test process keep separate counts). Naming follows Prometheus: a
// `return_address_` prefix, base units in the name (`_seconds`, `_bytes`), `_total` on counters.
// Label values come from fixed sets only (routes, outcomes, kinds, SMTP codes, store operations):
// never an address id, an IP or anything a client chooses, so the number of series is bounded.
//
// Counters are fed by the service's observer (domain/service-observer.ts), the HTTP hook below and
// the store wrapper; the gauges over the store are read at scrape time by queueTotals (index-only
// work, bounded), at most once per STORE_GAUGE_MIN_INTERVAL_MS however often Prometheus scrapes.
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Store, WakeListener } from '../domain/ports.js';
import type { DeliveryOutcome, DeliveryRoute, RefusalReason, ServiceObserver } from '../domain/service-observer.js';
import type { InProcessWakeupHub } from '../wakeup/wakeup-hub.js';
import { HttpMetrics } from './http-metrics.js';

/** Unacknowledged events are counted up to this many; past it the gauge reads this (a bound on scrape work). */
export const UNACKNOWLEDGED_COUNT_CAP = 1_000_000;
/** The store's totals are re-read at most this often; scrapes in between reuse them. */
const STORE_GAUGE_MIN_INTERVAL_MS = 5_000;

export const ROUTES: readonly DeliveryRoute[] = ['inbox', 'capture', 'email', 'other'];
const REFUSALS = ['queue_full', 'expired', 'too_large', 'rate_limited'] as const;
export const WAITER_KINDS = ['long_poll', 'stream', 'claim'] as const;
/** The approvals' statuses (approvals/approval-model.ts): created pending, then an answer (decided), cancelled or expired. */
const APPROVAL_STATUSES = ['pending', 'decided', 'expired', 'cancelled'] as const;
const SIGNATURE_RESULTS = ['verified', 'failed', 'unverified', 'unsigned'] as const;

/** The kind of a registered waiter: every wait is a Follower (domain/follower.ts) that says what it follows. */
export function waiterKind(listener: WakeListener): string {
  const declared = (listener as { waiterKind?: unknown }).waiterKind;
  return typeof declared === 'string' && (WAITER_KINDS as readonly string[]).includes(declared) ? declared : 'other';
}

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

export class ServiceMetrics implements ServiceObserver {
  readonly registry = new Registry();
  private readonly deliveries: Counter<'route' | 'outcome'>;
  private readonly duplicates: Counter<'route'>;
  private readonly refused: Counter<'route' | 'reason'>;
  private readonly commitSeconds: Histogram;
  private readonly smtpReplies: Counter<'stage' | 'code'>;
  private readonly signatures: Counter<'result'>;
  private readonly approvals: Counter<'status'>;
  private readonly storeErrors: Counter<'operation'>;
  private totals: Promise<{ stored: number; unacknowledged: number; oldestUnacknowledgedAt: number | null }> | undefined;
  private totalsAt = 0;
  /** Answers by route template, their latency, and refused deliveries (http-metrics.ts). */
  readonly http: HttpMetrics;

  constructor(
    private readonly store: Store,
    hub: InProcessWakeupHub,
    private readonly now: () => number = Date.now,
  ) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.http = new HttpMetrics(this.registry);
    this.deliveries = new Counter({
      name: 'return_address_deliveries_total',
      help: 'Deliveries by way in (route) and how they ended (outcome).',
      labelNames: ['route', 'outcome'],
      registers,
    });
    this.duplicates = new Counter({
      name: 'return_address_duplicates_total',
      help: 'Deliveries answered with an already stored event (same dedupe key).',
      labelNames: ['route'],
      registers,
    });
    this.refused = new Counter({
      name: 'return_address_refused_total',
      help: 'Deliveries refused: queue_full, expired, too_large, rate_limited.',
      labelNames: ['route', 'reason'],
      registers,
    });
    this.commitSeconds = new Histogram({
      name: 'return_address_commit_duration_seconds',
      help: 'From handing an event to the store to its durable commit (group commit included).',
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    this.smtpReplies = new Counter({
      name: 'return_address_smtp_replies_total',
      help: 'SMTP replies at RCPT TO and at the end of DATA, by reply code.',
      labelNames: ['stage', 'code'],
      registers,
    });
    this.signatures = new Counter({
      name: 'return_address_signatures_total',
      help: 'Captured requests by signature verdict: verified, failed, unverified (no secret set), unsigned.',
      labelNames: ['result'],
      registers,
    });
    this.approvals = new Counter({
      name: 'return_address_approvals_total',
      help: 'Approval steps by status: pending (created), decided (each answer recorded), cancelled, expired.',
      labelNames: ['status'],
      registers,
    });
    this.storeErrors = new Counter({
      name: 'return_address_store_errors_total',
      help: 'Store operations that failed, by operation.',
      labelNames: ['operation'],
      registers,
    });
    const build = new Gauge({
      name: 'return_address_build_info',
      help: 'Always 1; the labels say what runs.',
      labelNames: ['version', 'node_version', 'store'],
      registers,
    });
    build.set({ version: packageVersion(), node_version: process.version, store: store.kind }, 1);

    const metrics = this;
    new Gauge({
      name: 'return_address_events_stored',
      help: 'Events stored, acknowledged or not, all addresses together.',
      registers,
      async collect() {
        this.set((await metrics.storeTotals()).stored);
      },
    });
    new Gauge({
      name: 'return_address_events_unacknowledged',
      help: `Events not yet acknowledged (counted up to ${UNACKNOWLEDGED_COUNT_CAP}).`,
      registers,
      async collect() {
        this.set((await metrics.storeTotals()).unacknowledged);
      },
    });
    new Gauge({
      name: 'return_address_oldest_unacknowledged_age_seconds',
      help: 'Age of the oldest unacknowledged event (0 when there is none).',
      registers,
      async collect() {
        const oldest = (await metrics.storeTotals()).oldestUnacknowledgedAt;
        this.set(oldest === null ? 0 : Math.max(0, (metrics.now() - oldest) / 1000));
      },
    });
    new Gauge({
      name: 'return_address_waiters',
      help: 'Reads held open right now, by kind: long_poll, stream, claim.',
      labelNames: ['kind'],
      registers,
      collect() {
        const counts = hub.countByKind(waiterKind);
        for (const kind of WAITER_KINDS) this.set({ kind }, counts.get(kind) ?? 0);
      },
    });
    // Every label value starts at 0, so a rate() over it exists before the first event.
    for (const route of ROUTES) {
      this.duplicates.inc({ route }, 0);
      for (const reason of REFUSALS) this.refused.inc({ route, reason }, 0);
    }
    for (const result of SIGNATURE_RESULTS) this.signatures.inc({ result }, 0);
    for (const status of APPROVAL_STATUSES) this.approvals.inc({ status }, 0);
  }

  /** The store's totals, shared by the three gauges of one scrape and reused for a few seconds. */
  private storeTotals() {
    if (this.totals === undefined || this.now() - this.totalsAt >= STORE_GAUGE_MIN_INTERVAL_MS) {
      this.totalsAt = this.now();
      this.totals = this.store.queueTotals(UNACKNOWLEDGED_COUNT_CAP).catch((err: unknown) => {
        this.totals = undefined;
        this.storeError('queueTotals');
        throw err;
      });
    }
    return this.totals;
  }

  /** Forget cached store totals (tests read exact values right after a load). */
  refresh(): void {
    this.totals = undefined;
  }

  delivery(route: DeliveryRoute, outcome: DeliveryOutcome): void {
    this.deliveries.inc({ route, outcome });
    if (outcome === 'duplicate') this.duplicates.inc({ route });
    else if ((REFUSALS as readonly string[]).includes(outcome)) this.refused.inc({ route, reason: outcome });
    // HTTP refusals are counted from their answers (http-metrics.ts); a mail's here, by the service's verdict.
    if (route === 'email' && outcome !== 'created' && outcome !== 'duplicate') {
      this.http.refused('email', outcome === 'error' ? 'unavailable' : outcome);
    }
  }

  mailRefused(reason: RefusalReason): void {
    this.http.refused('email', reason);
  }

  commit(seconds: number): void {
    this.commitSeconds.observe(seconds);
  }

  signature(result: 'verified' | 'failed' | 'unverified' | 'unsigned'): void {
    this.signatures.inc({ result });
  }

  approval(status: string): void {
    this.approvals.inc({ status: (APPROVAL_STATUSES as readonly string[]).includes(status) ? status : 'other' });
  }

  smtp(stage: 'rcpt' | 'data', code: number): void {
    this.smtpReplies.inc({ stage, code: Number.isInteger(code) && code >= 200 && code < 600 ? String(code) : 'other' });
  }

  storeError(operation: string): void {
    this.storeErrors.inc({ operation });
  }

  /**
   * A request body over the size limit is refused (413) before any route handler runs, so the
   * service never sees it: counted here as a too_large refusal of its route. A 413 that reached the
   * handler was counted by the service already.
   */
  registerHttpHooks(app: FastifyInstance): void {
    this.http.registerHooks(app);
    const reached = new WeakSet<object>();
    app.addHook('preHandler', async (request) => {
      reached.add(request);
    });
    app.addHook('onResponse', async (request, reply) => {
      if (reply.statusCode !== 413 || reached.has(request)) return;
      const url = request.routeOptions.url ?? '';
      const route: DeliveryRoute | undefined = url.startsWith('/api/v1/inbox/') ? 'inbox' : url.startsWith('/api/v1/hooks/') ? 'capture' : undefined;
      if (route) this.delivery(route, 'too_large');
    });
  }
}

/**
 * The store with every failed operation counted (return_address_store_errors_total{operation}).
 * Methods run on the store itself (`this` is the store, not a proxy), so its own hot paths pay
 * nothing; each call from outside pays one wrapper.
 */
export function countingStoreErrors<S extends Store>(store: S, metrics: ServiceMetrics): S {
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      let w = wrapped.get(prop);
      if (w === undefined) {
        const fn = value as (...args: unknown[]) => unknown;
        w = (...args: unknown[]) => {
          let result: unknown;
          try {
            result = fn.apply(target, args);
          } catch (err) {
            metrics.storeError(prop);
            throw err;
          }
          if (result instanceof Promise) result.catch(() => metrics.storeError(prop));
          return result;
        };
        wrapped.set(prop, w);
      }
      return w;
    },
  });
}
