// The one state machine behind every read that may wait for the queue to change: a long-poll
// (long-poll.ts), a live stream (event-stream.ts), and claims next. Each of those is a `Follow`:
// it says how to read and what a page means; this file alone decides when to register, when to
// read and what to do with a wake-up, so the order that makes waiting correct is written once.
//
// The order (design.md, "The wakeup hub and followers"): register a waiter, then read; a wake-up that arrives
// while a read is in flight is remembered and handled once the read has answered; after every
// page that goes on, register afresh before the next read. An event committed between a read and
// the wait has then already signalled the registered waiter, so none slips through.
//
// A wake-up is only a hint: the read decides. A filtered wait (event-filter.ts) is woken by every
// change of its address, reads, finds nothing that matches, and waits again from where it read to.
//
// It is driven by callbacks, not an async loop: a follower that waits holds this object, its hub
// registration and a timer, and no promise, no suspended async frame and no AbortController. The
// reads are its only asynchronous steps.
import { credentialsRotated } from './errors.js';
import type { TokenListener, Waiter, WakeListener, WakeReason, WakeupHub } from './ports.js';

/**
 * What a page means to its follow:
 * - `wait`: nothing to hand on; wait for a wake-up (a follower that read without registering
 *   first registers and reads once more before waiting);
 * - `again`: register and read at once (the page was handed on, or the scan is not finished);
 * - `hold`: read nothing until `resume()` (the consumer of the pages is full); no waiter is held;
 * - `done`: the follow is over; `end('done')` follows.
 */
export type AfterPage = 'wait' | 'again' | 'hold' | 'done';

/** Why a follow ended: `done` (its page said so), `timeout` (its wait said so), `shutdown`, `cancelled`, or `failed` (a read rejected). */
export type FollowEnd = 'done' | 'timeout' | 'shutdown' | 'cancelled' | 'failed';

export interface Follow<P> {
  /** What kind of wait this is, for the operator's count of waiters by kind (metrics). */
  readonly waiterKind: 'long_poll' | 'stream' | 'claim';
  /** One read of the store (the follow knows its own cursor). A rejection ends the follow with `failed`. */
  read(): Promise<P>;
  /** What the page means (see AfterPage). May hand the page on, e.g. write it to a client. */
  page(page: P): AfterPage;
  /** How long the next registration may wait, in ms (a long-poll's remaining time, a stream's heartbeat). */
  waitMs(): number;
  /** A registration waited `waitMs()` with no change: true to read again (a heartbeat), false to end with `timeout`. */
  timedOut(): boolean;
  /** Called exactly once, last; `err` is the read's rejection when `failed`. Must not throw. */
  end(reason: FollowEnd, err?: unknown): void;
  /**
   * A filtered follow's cheap answer to a change, shared by every waiter of the address
   * (EventReads.screen): looks at the events after its cursor and calls the follower's
   * `screened(true)` when they may hold something for it (then it reads), or moves its cursor past
   * them in memory and calls `screened(false)` (then it waits on). Undefined when every change may
   * be for it (no filter): then each change ends the registration and it reads.
   */
  readonly screen?: (() => void) | undefined;
}

/**
 * Ends of follows a rotation stopped, answered a slice per turn: one rotation may end thousands of
 * waits at once, and answering each (a 401, a last frame) costs ~0.25 ms, so all in one turn would
 * hold the event loop (and /healthz) for seconds. The follows themselves stop in the rotation's turn.
 */
const ENDS_PER_TURN = 100;
const pendingEnds: (() => void)[] = [];
function endSoon(end: () => void): void {
  if (pendingEnds.push(end) === 1) setImmediate(drainEnds);
}
function drainEnds(): void {
  for (const end of pendingEnds.splice(0, ENDS_PER_TURN)) {
    try {
      end();
    } catch (err) {
      process.emitWarning(`a follower's callback threw: ${String(err)}`, 'FollowerCallbackError');
    }
  }
  if (pendingEnds.length > 0) setImmediate(drainEnds);
}

export class Follower<P> implements WakeListener, TokenListener {
  /** The hub holds followers; the metrics count them by the kind of their follow. */
  get waiterKind(): Follow<P>['waiterKind'] {
    return this.follow.waiterKind;
  }

  private waiter: Waiter | undefined;
  /** Held from the first wait to the end when the follow reads for a read token (WakeupHub.watchToken). */
  private tokenWatch: Waiter | undefined;
  private reading = false;
  /** A wake-up that arrived while a read was in flight: handled once the read has answered. */
  private wokenDuringRead: WakeReason | undefined;
  private holding = false;
  private finished = false;
  /** Stopped by a rotation, its end('failed') not yet called (endSoon). */
  private endPending = false;
  /** A screen (Follow.screen) is in flight; a change meanwhile is remembered and screened after it. */
  private screening = false;
  private changedDuringScreen = false;

  constructor(
    private readonly hub: WakeupHub,
    private readonly addressId: string,
    private readonly follow: Follow<P>,
    /**
     * The SHA-256 of the read token the reader opened this follow with: once it waits, a rotation
     * of that token ends it with credentials_rotated (`failed`). Undefined: the service's own
     * reads (push), which no reader's token governs.
     */
    private readonly readTokenHash?: Buffer,
  ) {}

  /**
   * `registerFirst`: register, then read (a stream, which always goes on waiting). Otherwise read
   * first and register only when the page says `wait` (a long-poll: a read that can answer at once
   * costs no registration).
   */
  start(registerFirst: boolean): void {
    if (registerFirst) this.registerThenRead();
    else this.readPage(false);
  }

  /** After a `hold`: go on reading. Ignored otherwise. */
  resume(): void {
    if (this.finished || !this.holding) return;
    this.holding = false;
    this.registerThenRead();
  }

  /** The reader went away: stop, release the waiter, end with `cancelled`. Idempotent. */
  cancel(): void {
    // Stopped by a rotation and not yet answered: the reader left first, so it ends as any cancel does.
    if (this.endPending) {
      this.endPending = false;
      return this.follow.end('cancelled');
    }
    this.finish('cancelled');
  }

  /** From the hub: once per registration, or for a kept one (a screened follow), on every change until it ends. */
  wake(reason: WakeReason): void {
    // A screened follow's registration is kept through 'changed' (WakeupHub.register's `keep`).
    if (reason !== 'changed' || this.follow.screen === undefined) this.waiter = undefined;
    if (this.reading) {
      // 'shutdown' outranks a remembered 'changed' or 'timeout'.
      if (this.wokenDuringRead !== 'shutdown') this.wokenDuringRead = reason;
      return;
    }
    this.onWake(reason);
  }

  private onWake(reason: WakeReason): void {
    if (this.finished) return;
    if (reason === 'shutdown') return this.finish('shutdown');
    if (reason === 'timeout' && !this.follow.timedOut()) return this.finish('timeout');
    // timedOut() may have led to cancel() (a heartbeat written to a closed client).
    if (this.finished) return;
    // A change to a screened follow that is still registered: its registration and timer stay;
    // only a change that may hold something for it leads to a read.
    if (reason === 'changed' && this.follow.screen !== undefined && this.waiter !== undefined) return this.screenChange();
    this.registerThenRead();
  }

  private screenChange(): void {
    if (this.screening) {
      this.changedDuringScreen = true;
      return;
    }
    this.screening = true;
    this.follow.screen!();
  }

  /**
   * The answer to Follow.screen: `readAgain` when the new events may hold something for this
   * follow. Otherwise it waits on, registered as it was, and screens once more if its address
   * changed while the screen was in flight (that change may be after what the screen read).
   */
  screened(readAgain: boolean): void {
    this.screening = false;
    const changed = this.changedDuringScreen;
    this.changedDuringScreen = false;
    // Since the screen began, the follow ended, or read (a heartbeat, whose read came after the
    // change and so covers it), or stopped reading (hold) and will register afresh: nothing to do.
    if (this.finished || this.reading || this.holding || this.waiter === undefined) return;
    // Still registered (kept) since before the change: a change during this read is remembered by wake().
    if (readAgain) return this.readPage(true);
    if (changed) this.screenChange();
  }

  /**
   * From the hub: the read token this follow was opened with was rotated away. It stops now (a read
   * in flight is dropped when it answers: onPage sees the follow finished, so nothing read after the
   * rotation reached here is handed on) and ends with credentials_rotated as its failure a few
   * turns later at most (endSoon), unless cancel() comes first.
   */
  revoked(): void {
    this.tokenWatch = undefined;
    if (this.finished) return;
    this.finished = true;
    this.waiter?.cancel();
    this.waiter = undefined;
    this.endPending = true;
    endSoon(() => {
      if (!this.endPending) return;
      this.endPending = false;
      this.follow.end('failed', credentialsRotated());
    });
  }

  private registerThenRead(): void {
    // Watched once, from the first wait on: a follow that answers at once costs no watch.
    if (this.readTokenHash !== undefined && this.tokenWatch === undefined) {
      this.tokenWatch = this.hub.watchToken(this.addressId, this.readTokenHash, this);
      // Rotated already (between authentication and now): the hub ended this follow inside watchToken().
      if (this.finished) return;
    }
    this.waiter?.cancel();
    this.waiter = this.hub.register(this.addressId, this.follow.waitMs(), this, this.follow.screen !== undefined);
    // While shutting down, the hub woke (and so finished) this follower inside register().
    if (!this.finished) this.readPage(true);
  }

  private readPage(registered: boolean): void {
    this.reading = true;
    // end() and page() must not throw; should one, the rejection is reported as a warning instead
    // of ending the process as an unhandled rejection.
    this.follow
      .read()
      .then(
        (page) => this.onPage(page, registered),
        (err: unknown) => this.onReadFailed(err),
      )
      .catch((err: unknown) => process.emitWarning(`a follower's callback threw: ${String(err)}`, 'FollowerCallbackError'));
  }

  private onPage(page: P, registered: boolean): void {
    this.reading = false;
    if (this.finished) return;
    const woken = this.wokenDuringRead;
    this.wokenDuringRead = undefined;
    if (woken === 'shutdown') return this.finish('shutdown');
    const next = this.follow.page(page);
    if (this.finished) return; // page() led to cancel()
    switch (next) {
      case 'done':
        return this.finish('done');
      case 'again':
        // A remembered wake-up is covered: the next read comes after a fresh registration.
        return this.registerThenRead();
      case 'hold':
        this.waiter?.cancel();
        this.waiter = undefined;
        this.holding = true;
        return;
      case 'wait':
        if (!registered) return this.registerThenRead();
        // Registered before the read: wait for it, unless it already fired during the read.
        if (woken !== undefined) this.onWake(woken);
        return;
    }
  }

  private onReadFailed(err: unknown): void {
    this.reading = false;
    this.finish('failed', err);
  }

  private finish(reason: FollowEnd, err?: unknown): void {
    if (this.finished) return;
    this.finished = true;
    this.waiter?.cancel();
    this.waiter = undefined;
    this.tokenWatch?.cancel();
    this.tokenWatch = undefined;
    this.follow.end(reason, err);
  }
}
