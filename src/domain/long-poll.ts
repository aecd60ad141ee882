// One read of the queue that may be held: endpoint 4 with wait > 0, and MCP's list_events and
// wait_for_event through ReturnAddressService.listEvents.
//
// The order that makes it correct (design.md, "The wakeup hub and followers"): read; if nothing is after the cursor, register
// a waiter, then re-read, then wait; after every 'changed', register again and re-read. An event
// committed between a read and the wait has already signalled the registered waiter.
//
// It is a small state machine driven by callbacks, not an async loop: a poll that is waiting holds
// this object, its hub registration and a timer, and no promise, no suspended async frame and no
// AbortController. Reads are the only asynchronous steps, and nothing waits on them while idle.
import type { Page } from './model.js';
import type { WakeListener, WakeReason, Waiter, WakeupHub } from './ports.js';

/**
 * Called exactly once: with an error (the address is gone: not_found; or the store failed), or
 * with the page to answer. Must not throw: it runs from timers and hub notifications.
 */
export type PollCallback = (err: unknown, page: Page | undefined) => void;

export class LongPoll implements WakeListener {
  private waiter: Waiter | undefined;
  private reading = false;
  /** A wake-up that arrived while a re-read was in flight: handled once the read has answered. */
  private wokenDuringRead: WakeReason | undefined;
  private finished = false;
  /** The latest page read: empty once waiting; what a timeout, a shutdown or cancel() answers. */
  private latest: Page;

  constructor(
    private readonly hub: WakeupHub,
    private readonly addressId: string,
    private readonly read: () => Promise<Page>,
    after: number,
    /** Epoch ms to wait until; undefined for a plain read. */
    private readonly deadline: number | undefined,
    private readonly now: () => number,
    private readonly callback: PollCallback,
  ) {
    this.latest = { events: [], nextCursor: after, hasMore: false };
  }

  start(): void {
    this.readPage(false);
  }

  /** The client went away: stop waiting and answer the latest (empty) page. Idempotent. */
  cancel(): void {
    this.waiter?.cancel();
    this.finish(undefined, this.latest);
  }

  /** From the hub, once per registration. */
  wake(reason: WakeReason): void {
    if (this.reading) {
      this.wokenDuringRead = reason;
      return;
    }
    this.onWake(reason);
  }

  private onWake(reason: WakeReason): void {
    if (this.finished) return;
    if (reason === 'changed') this.registerThenRead();
    else this.finish(undefined, this.latest);
  }

  private registerThenRead(): void {
    this.waiter = this.hub.register(this.addressId, (this.deadline ?? 0) - this.now(), this);
    // While shutting down, the hub woke (and so finished) this poll inside register().
    if (!this.finished) this.readPage(true);
  }

  private readPage(registered: boolean): void {
    this.reading = true;
    // The callback must not throw (PollCallback); should it, the rejection is reported as a warning
    // instead of ending the process as an unhandled rejection.
    this.read().then((page) => this.onPage(page, registered), (err: unknown) => this.onReadFailed(err))
      .catch((err: unknown) => process.emitWarning(`a long-poll callback threw: ${String(err)}`, 'LongPollCallbackError'));
  }

  private onPage(page: Page, registered: boolean): void {
    this.reading = false;
    if (this.finished) return;
    if (page.events.length > 0 || this.deadline === undefined) {
      this.waiter?.cancel();
      this.finish(undefined, page);
      return;
    }
    this.latest = page;
    if (!registered) {
      this.registerThenRead();
      return;
    }
    const woken = this.wokenDuringRead;
    this.wokenDuringRead = undefined;
    if (woken !== undefined) this.onWake(woken);
  }

  private onReadFailed(err: unknown): void {
    this.reading = false;
    this.waiter?.cancel();
    this.finish(err, undefined);
  }

  private finish(err: unknown, page: Page | undefined): void {
    if (this.finished) return;
    this.finished = true;
    this.waiter = undefined;
    this.callback(err, page);
  }
}
