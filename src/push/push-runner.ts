// One subscription's delivery loop on the instance that holds its lease (push-worker.ts): read the
// events after its position (the named consumer push:<id>), POST them one at a time in order, move
// the position past each only after a 2xx, and on a failure stop: nothing after that event is sent
// until it succeeds. The retry is due after the schedule's next delay (or Retry-After, when later);
// after the schedule's last attempt, or a `webhook-delivery: abort` answer, the subscription is
// paused with its reason until resumed. With nothing to send, it waits on the wakeup hub: a new
// event on the address wakes it within milliseconds, and the sweep's interval bounds the wait.
// A subscription the DeliveryControl covers (MCP) also gets a `gap` body before delivery resumes
// past skipped events, and a `terminated` one when its address is gone (delivery-control.ts).
// It tells its SubscriptionLag where its position is and what its pages saw (the lag in events).

import type { PushConfig } from '../config.js';
import type { EventFilter } from '../domain/event-filter.js';
import type { AddressRecord, EventRecord } from '../domain/model.js';
import type { WakeupHub } from '../domain/ports.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';
import type { ControlPost, DeliveryControl } from './delivery-control.js';
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
  /** Control bodies for the subscriptions it covers (MCP); none when absent. */
  control?: DeliveryControl | undefined;
}

export class PushRunner {
  private stopped = false;
  private readonly abort = new AbortController();
  private wakeNow: (() => void) | undefined;
  private filter: EventFilter;
  /** The store's epoch, read once by a covered subscription. */
  private epoch: string | undefined;
  /** Whether the loop's end may be the address's (cleared only by an end for a known reason: paused, TTL over). */
  private ending = true;
  /** Set by a stop that is not the sweep's (shutdown): no terminated body is waited for or sent. */
  private readonly closing = new AbortController();
  /** The delivery loop. */
  readonly done: Promise<void>;
  /** How many sequences it is behind (push-metrics.ts, through the worker). */
  readonly lag: SubscriptionLag;
  /** The loop, then the terminated body if the address went (the worker waits for it on shutdown). */
  readonly ended: Promise<void>;

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
    this.ended = this.done
      .then(() => this.endIfAddressGone())
      .catch((err: unknown) => this.d.log.warn({ err, subscription: record.id, address: record.addressId }, 'push terminated body failed'));
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

  /** Ends the loop; `dropped`: by the sweep, which no longer holds it (a terminated body follows if its address is gone), else a shutdown. */
  stop(dropped = false): void {
    if (!dropped) this.closing.abort();
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
      if (fresh === null) return;
      if (fresh.pausedAt !== null || (fresh.expiresAt !== null && fresh.expiresAt <= this.d.now())) {
        this.ending = false;
        return;
      }
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
      if (!(await this.epochKept(cursor))) continue;
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
        if (page.nextCursor > cursor && !(await this.gapAnnounced(address, cursor, undefined))) continue;
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
      let position = cursor;
      for (const e of page.events) {
        if (this.stopped) return;
        if (!(await this.gapAnnounced(address, position, e)) || !(await this.deliver(e))) {
          all = false;
          break;
        }
        position = e.sequence;
      }
      if (all && page.nextCursor > page.events.at(-1)!.sequence) await this.seek(address.id, page.nextCursor);
    }
  }

  private async seek(addressId: string, cursor: number): Promise<void> {
    await this.d.store.consumers.seek(addressId, pushConsumerName(this.record.id), cursor, this.d.now(), Number.MAX_SAFE_INTEGER);
    this.lag.at(cursor);
  }

  /** A covered subscription after a restore (a new store epoch): a gap at its position first; false when that failed. */
  private async epochKept(cursor: number): Promise<boolean> {
    const c = this.d.control;
    if (!c?.covers(this.record.id)) return true;
    this.epoch ??= await c.epoch();
    const seen = this.record.deliveredEpoch;
    if (seen !== null && seen !== this.epoch && !(await this.send(c.gap(this.record.id, cursor, this.epoch), cursor))) return false;
    if (seen !== this.epoch) await this.d.subscriptions.markDeliveredEpoch(this.record.addressId, this.record.id, this.epoch);
    this.record = { ...this.record, deliveredEpoch: this.epoch };
    return true;
  }

  /** Before `shown` (or with none), events after `position` that retention removed are announced to a covered subscription; false when that failed. */
  private async gapAnnounced(address: AddressRecord, position: number, shown: EventRecord | undefined): Promise<boolean> {
    const c = this.d.control;
    if (!c?.covers(this.record.id) || shown?.sequence === position + 1 || this.epoch === undefined) return true;
    const upTo = await c.prunedUpTo(address, position, shown);
    return upTo === null || this.send(c.gap(this.record.id, upTo, this.epoch), upTo);
  }

  /** The secrets to sign with: the current one, and the one a refresh replaced while PUSH_ROTATION_GRACE_MS has not passed. */
  private secrets(): string[] | null {
    const r = this.record;
    const secret = this.d.seal.open(r.addressId, r.id, r.secret);
    if (secret === null) return null;
    if (r.previousSecret === null || r.secretRotatedAt === null || this.d.now() >= r.secretRotatedAt + this.d.config.rotationGraceMs) return [secret];
    const old = this.d.seal.open(r.addressId, r.id, r.previousSecret);
    return old === null || old === secret ? [secret] : [secret, old];
  }

  /**
   * After the loop (row gone, address unusable, lease lost, a write failing on a deleted address,
   * dropped by the sweep; not a pause, a TTL or a shutdown): if the address is gone, a covered
   * subscription is told, once, best effort.
   */
  private async endIfAddressGone(): Promise<void> {
    const c = this.d.control;
    if (!this.ending || this.closing.signal.aborted || !c?.covers(this.record.id)) return;
    this.ending = false;
    const { addressId, id, url } = this.record;
    if ((await this.d.service.findAddress(addressId)) !== null) {
      // Unsubscribed or its TTL over: the client's end, nothing to say.
      if ((await this.d.subscriptions.getSubscription(addressId, id)) === null) return;
      // The row is still there (paused, leased elsewhere, or locked by a deletion not yet committed,
      // which the lease skips): a deletion notifies the hub once committed; wait that long, at most a lease.
      await this.notified(addressId, this.d.config.leaseMs);
      if (this.closing.signal.aborted || (await this.d.service.findAddress(addressId)) !== null) return;
    }
    const secret = this.secrets();
    if (secret === null || this.closing.signal.aborted) return;
    const post = c.terminated(id);
    const free = await this.d.slot();
    try {
      const { timeoutMs, allowPrivate } = this.d.config;
      const outcome = await postWebhook({
        url,
        secret,
        ...post,
        timeoutMs,
        allowPrivate,
        resolve: this.d.resolve,
        now: this.d.now,
        signal: this.closing.signal,
      });
      this.d.observer.attempt(outcome.status !== null && outcome.status >= 200 && outcome.status < 300 ? 'delivered' : 'failed');
    } finally {
      free();
    }
    // An address past its expiry is not usable before the sweeper deletes it: the row goes now, so it is said once.
    await this.d.subscriptions.removeSubscription(addressId, id);
  }

  /** Resolves at the address's next change, after `ms`, or at shutdown. */
  private notified(addressId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const signal = this.closing.signal;
      const waiter = this.d.hub.register(addressId, ms, { wake: () => done() });
      const done = () => {
        waiter.cancel();
        signal.removeEventListener('abort', done);
        resolve();
      };
      signal.addEventListener('abort', done);
      if (signal.aborted) done();
    });
  }

  /** One attempt at `e`; true when it was delivered (and the position moved past it). */
  private deliver(e: EventRecord): Promise<boolean> {
    return this.send({ messageId: e.id, ...webhookRequest(this.record.id, e, this.d.baseUrl) }, e.sequence, e);
  }

  /** One attempt at a POST, an event's or (no `e`) a control body; true when it got a 2xx and the position moved to `position`. */
  private async send(post: Omit<ControlPost, 'headers'> & { headers?: Record<string, string> }, position: number, e?: EventRecord): Promise<boolean> {
    const r = this.record;
    const secret = this.secrets();
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
        ...post,
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
      if (e) this.d.observer.delivered(now - e.createdAt);
      await this.seek(r.addressId, position);
      await this.settle({
        attempts: 0,
        nextAttemptAt: null,
        pausedAt: null,
        pausedReason: null,
        lastAttemptAt: started,
        lastStatus: outcome.status,
        lastError: e ? null : r.lastError,
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
    const what = e ? `event ${e.id}` : post.messageId;
    if (verdict === 'skip' && e) {
      await this.settle({ ...state, attempts: 0, lastError: `answered ${outcome.status}: not retried, ${what} given up` });
      const c = this.d.control;
      if (c?.covers(r.id) && this.epoch !== undefined) return this.send(c.gap(r.id, e.sequence, this.epoch), e.sequence); // the client is told it was skipped
      await this.seek(r.addressId, e.sequence);
      return true;
    }
    if (verdict === 'pause') {
      await this.settle({ ...state, pausedAt: now, pausedReason: `the receiver answered ${outcome.status} (gone) to ${what}: not retried` });
    } else if (outcome.abort) {
      await this.settle({ ...state, pausedAt: now, pausedReason: `the receiver answered webhook-delivery: abort (status ${outcome.status}) to ${what}` });
    } else if (state.attempts >= schedule.length) {
      await this.settle({ ...state, pausedAt: now, pausedReason: `${state.attempts} attempts at ${what} failed; the last: ${outcome.error}` });
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
