// One subscription's delivery loop on the instance that holds its lease (push-worker.ts): read the
// events after its position (the named consumer push:<id>), POST them one at a time in order, move
// the position past each only after a 2xx, and on a failure stop: nothing after that event is sent
// until it succeeds. The retry is due after the schedule's next delay (or Retry-After, when later);
// after the schedule's last attempt, or a `webhook-delivery: abort` answer, the subscription is
// paused with its reason until resumed. With nothing to send, it waits on the wakeup hub: a new
// event on the address wakes it within milliseconds, and the sweep's interval bounds the wait.
// It tells its SubscriptionLag where its position is and what its pages saw (the lag in events).

import type { PushConfig } from '../config.js';
import type { EventFilter } from '../domain/event-filter.js';
import type { EventRecord } from '../domain/model.js';
import type { WakeupHub } from '../domain/ports.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';
import { type LastSequence, SubscriptionLag } from './subscription-lag.js';
import type { SecretSeal } from './subscription-secret.js';
import type { DeliveryState, PushStore, SubscriptionRecord, SubscriptionStore } from './subscription-store.js';
import { pushConsumerName, storedFilter } from './subscriptions.js';
import type { Resolve } from './target-guard.js';
import { failureVerdict, webhookRequest } from './webhook-body.js';
import { type AttemptOutcome, postWebhook, type WebhookAgents } from './webhook-post.js';

/** Events read per page: each is POSTed alone, so a page is only how far one read looks ahead. */
const PAGE_EVENTS = 20;
/** An idle subscription re-reads at least this often even if no wake-up came (a lost notification costs at most this). */
const IDLE_RECHECK_MS = 30_000;

export type AttemptResult = 'delivered' | 'failed' | 'timeout' | 'refused' | 'aborted';

/** What the worker's metrics are told (push-metrics.ts). */
export interface PushObserver {
  attempt(result: AttemptResult): void;
  /** After a delivery: how far behind the newest delivered event was, in ms since it was stored. */
  delivered(lagMs: number): void;
}

export interface RunnerDeps {
  service: ReturnAddressService;
  store: PushStore;
  subscriptions: SubscriptionStore;
  hub: WakeupHub;
  config: PushConfig;
  seal: SecretSeal;
  resolve: Resolve;
  baseUrl: string;
  owner: string;
  /** Waits for a free attempt slot of the instance (PUSH_CONCURRENCY); the result frees it. */
  slot: () => Promise<() => void>;
  observer: PushObserver;
  log: { warn(obj: object, msg: string): void };
  now: () => number;
  /** The instance's kept-alive connections to receivers. */
  agents?: WebhookAgents;
  /** The address's last sequence (the store's epochs.lastSequence), for the lag in events. */
  lastSequence?: LastSequence;
}

export class PushRunner {
  private stopped = false;
  private readonly abort = new AbortController();
  private wakeNow: (() => void) | undefined;
  private filter: EventFilter;
  readonly done: Promise<void>;
  /** How many sequences it is behind (push-metrics.ts, through the worker). */
  readonly lag: SubscriptionLag;

  constructor(
    private record: SubscriptionRecord,
    private readonly d: RunnerDeps,
  ) {
    this.filter = storedFilter(record);
    this.lag = new SubscriptionLag(record.addressId, d.hub, d.lastSequence);
    this.done = this.loop()
      .catch((err: unknown) => {
        this.d.log.warn({ err, subscription: record.id, address: record.addressId }, 'push delivery loop failed; the sweep restarts it');
      })
      .finally(() => this.lag.close());
  }

  get key(): string {
    return `${this.record.addressId}/${this.record.id}`;
  }

  /** The row may have changed (refresh, resume): the loop reads it again at once. */
  update(): void {
    this.wake();
  }

  wake(): void {
    this.wakeNow?.();
  }

  stop(): void {
    this.stopped = true;
    this.abort.abort();
    this.wake();
  }

  /** Sleeps until `ms` pass (a retry falls due), wake() or stop(). */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => finish(), Math.max(0, ms));
      const finish = () => {
        clearTimeout(timer);
        this.wakeNow = undefined;
        resolve();
      };
      this.wakeNow = finish;
      if (this.stopped) finish();
    });
  }

  private async loop(): Promise<void> {
    const { service, store } = this.d;
    const name = pushConsumerName(this.record.id);
    while (!this.stopped) {
      // The row as stored: a refresh, a resume or a delete since the last turn applies now.
      const fresh = await this.d.subscriptions.getSubscription(this.record.addressId, this.record.id);
      if (fresh === null || fresh.pausedAt !== null || (fresh.expiresAt !== null && fresh.expiresAt <= this.d.now())) return;
      if (fresh.filter !== this.record.filter) this.filter = storedFilter(fresh);
      this.record = fresh;
      const due = this.record.nextAttemptAt ?? 0;
      const now = this.d.now();
      if (due > now) {
        await this.sleep(due - now);
        continue;
      }
      const address = await service.findAddress(this.record.addressId);
      if (!address) return;
      const cursor = (await store.consumers.position(address.id, name)) ?? 0;
      this.lag.at(cursor);
      // The hub waiter is registered before the read: an event committed after the read wakes it.
      let woken = false;
      const waiter = this.d.hub.register(address.id, IDLE_RECHECK_MS, {
        wake: () => {
          woken = true;
          this.wake();
        },
      });
      let page: Awaited<ReturnType<ReturnAddressService['listEvents']>>;
      try {
        page = await service.listEvents(address, { after: cursor, limit: PAGE_EVENTS, wait: 0, filter: this.filter });
      } catch (err) {
        waiter.cancel();
        throw err;
      }
      this.lag.page(page);
      if (page.events.length === 0) {
        if (page.nextCursor > cursor) await this.seek(address.id, page.nextCursor); // passed over by the filter
        if (page.hasMore || woken) {
          waiter.cancel();
          continue;
        }
        // Woken by the hub (a new event) or the sweep's interval, whichever first.
        this.lag.idle = true;
        await new Promise<void>((resolve) => {
          this.wakeNow = () => {
            this.wakeNow = undefined;
            waiter.cancel();
            resolve();
          };
          if (woken || this.stopped) this.wakeNow();
        });
        this.lag.idle = false;
        continue;
      }
      waiter.cancel();
      let all = true;
      for (const e of page.events) {
        if (this.stopped) return;
        if (!(await this.deliver(e))) {
          all = false;
          break;
        }
      }
      if (all && page.nextCursor > page.events.at(-1)!.sequence) await this.seek(address.id, page.nextCursor);
    }
  }

  private async seek(addressId: string, cursor: number): Promise<void> {
    await this.d.store.consumers.seek(addressId, pushConsumerName(this.record.id), cursor, this.d.now(), Number.MAX_SAFE_INTEGER);
    this.lag.at(cursor);
  }

  /** One attempt at `e`; true when it was delivered (and the position moved past it). */
  private async deliver(e: EventRecord): Promise<boolean> {
    const r = this.record;
    const secret = this.d.seal.open(r.addressId, r.id, r.secret);
    if (secret === null) {
      await this.settle({
        ...this.failedState(this.d.now(), null, 'the secret does not open with this instance key (set the same PUSH_SEAL_KEY on every instance)'),
        pausedAt: this.d.now(),
        pausedReason: 'secret_unreadable',
      });
      return false;
    }
    const free = await this.d.slot();
    let outcome: AttemptOutcome;
    const started = this.d.now();
    try {
      outcome = await postWebhook({
        url: r.url,
        secret,
        messageId: e.id,
        ...webhookRequest(r.id, e, this.d.baseUrl),
        timeoutMs: this.d.config.timeoutMs,
        allowPrivate: this.d.config.allowPrivate,
        resolve: this.d.resolve,
        now: this.d.now,
        signal: this.abort.signal,
        ...(this.d.agents ? { agents: this.d.agents } : {}),
      });
    } finally {
      free();
    }
    const now = this.d.now();
    if (this.stopped && outcome.status === null) return false; // cut off by stop(): not a failure of the receiver
    if (outcome.status !== null && outcome.status >= 200 && outcome.status < 300) {
      this.d.observer.attempt('delivered');
      this.d.observer.delivered(now - e.createdAt);
      await this.seek(r.addressId, e.sequence);
      await this.settle({
        attempts: 0,
        nextAttemptAt: null,
        pausedAt: null,
        pausedReason: null,
        lastAttemptAt: started,
        lastStatus: outcome.status,
        lastError: null,
        lastSuccessAt: now,
      });
      return true;
    }
    this.d.observer.attempt(
      outcome.abort ? 'aborted' : outcome.refused ? 'refused' : outcome.status === null && /no answer/.test(outcome.error ?? '') ? 'timeout' : 'failed',
    );
    const state = this.failedState(started, outcome.status, outcome.error);
    const schedule = this.d.config.retryScheduleMs;
    const verdict = failureVerdict(r.id, outcome.status);
    if (verdict === 'skip') {
      await this.seek(r.addressId, e.sequence);
      await this.settle({ ...state, attempts: 0, lastError: `answered ${outcome.status}: not retried, event ${e.id} given up` });
      return true;
    }
    if (verdict === 'pause') {
      await this.settle({ ...state, pausedAt: now, pausedReason: `the receiver answered ${outcome.status} (gone) to event ${e.id}: not retried` });
    } else if (outcome.abort) {
      await this.settle({ ...state, pausedAt: now, pausedReason: `the receiver answered webhook-delivery: abort (status ${outcome.status}) to event ${e.id}` });
    } else if (state.attempts >= schedule.length) {
      await this.settle({ ...state, pausedAt: now, pausedReason: `${state.attempts} attempts at event ${e.id} failed; the last: ${outcome.error}` });
    } else {
      const delay = Math.max(schedule[state.attempts] ?? 0, outcome.retryAfterMs ?? 0);
      await this.settle({ ...state, nextAttemptAt: now + delay });
    }
    return false;
  }

  private failedState(started: number, status: number | null, error: string | null): DeliveryState {
    return {
      attempts: this.record.attempts + 1,
      nextAttemptAt: null,
      pausedAt: null,
      pausedReason: null,
      lastAttemptAt: started,
      lastStatus: status,
      lastError: error,
      lastSuccessAt: this.record.lastSuccessAt,
    };
  }

  /** Stores the delivery state; a lease lost meanwhile (another instance took over) stops this loop. */
  private async settle(state: DeliveryState): Promise<void> {
    const kept = await this.d.subscriptions.recordDelivery(this.record.addressId, this.record.id, this.d.owner, state);
    this.record = { ...this.record, ...state };
    if (!kept) this.stopped = true;
  }
}
