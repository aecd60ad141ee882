// One live stream of an address's queue (GET …/events/stream): every event after a cursor, in
// sequence order and without a gap, for as long as the client stays, also when other instances
// append (their notifications reach the same hub).
//
// It follows the long-poll's order (long-poll.ts, design.md, "The wakeup hub and followers"), in a loop: register a waiter,
// then read after the cursor; events read are handed to the sink and the cursor moves to the last
// one, then it registers and reads again; an empty read waits for the waiter. An event committed
// between a read and the wait has already signalled the registered waiter, so none slips through.
//
// States: reading (a store read in flight; a wake-up meanwhile is remembered and handled after
// it), waiting (registered, nothing to send), blocked (the sink's buffer is full: nothing is read
// until it drains, so a client that does not read holds at most one page in memory), finished.
// The waiter's timeout is the heartbeat: each one sends a comment and re-reads. 'shutdown' ends
// the stream; so does the address going away (the read fails with not_found) or a store failure,
// both passed to the sink's end().
import type { EventRecord, Page } from './model.js';
import type { WakeListener, WakeReason, Waiter, WakeupHub } from './ports.js';

export interface StreamSink {
  /** Writes the events; false when the client's buffer is full: then call `resume` once it drains. */
  send(events: EventRecord[], resume: () => void): boolean;
  /** Nothing happened for a heartbeat interval. */
  heartbeat(): void;
  /** The stream is over: `err` is why (not_found when the address was deleted), undefined on shutdown. Called once. */
  end(err: unknown): void;
}

export class EventStream implements WakeListener {
  private waiter: Waiter | undefined;
  private reading = false;
  private wokenDuringRead: WakeReason | undefined;
  private finished = false;

  constructor(
    private readonly hub: WakeupHub,
    private readonly addressId: string,
    private readonly read: (after: number) => Promise<Page>,
    private cursor: number,
    private readonly heartbeatMs: number,
    private readonly sink: StreamSink,
  ) {}

  /** The sequence of the last event handed to the sink (or the starting cursor). */
  get position(): number {
    return this.cursor;
  }

  start(): void {
    this.registerThenRead();
  }

  /** The client went away: stop without calling the sink. Idempotent. */
  cancel(): void {
    this.finished = true;
    this.waiter?.cancel();
    this.waiter = undefined;
  }

  /** From the hub, once per registration. */
  wake(reason: WakeReason): void {
    this.waiter = undefined;
    if (this.reading) {
      // 'shutdown' outranks a remembered 'changed'.
      if (this.wokenDuringRead !== 'shutdown') this.wokenDuringRead = reason;
      return;
    }
    this.onWake(reason);
  }

  private onWake(reason: WakeReason): void {
    if (this.finished) return;
    if (reason === 'shutdown') return this.finish(undefined);
    if (reason === 'timeout') this.sink.heartbeat();
    if (!this.finished) this.registerThenRead();
  }

  private registerThenRead(): void {
    this.waiter?.cancel();
    this.waiter = this.hub.register(this.addressId, this.heartbeatMs, this);
    // While shutting down, the hub woke (and so finished) this stream inside register().
    if (this.finished) return;
    this.reading = true;
    this.read(this.cursor).then((page) => this.onPage(page), (err: unknown) => this.onReadFailed(err))
      .catch((err: unknown) => process.emitWarning(`an event stream's sink threw: ${String(err)}`, 'EventStreamSinkError'));
  }

  private onPage(page: Page): void {
    this.reading = false;
    if (this.finished) return;
    const woken = this.wokenDuringRead;
    this.wokenDuringRead = undefined;
    if (woken === 'shutdown') return this.finish(undefined);
    if (page.events.length === 0) {
      // Registered before the read: wait for it, unless it already fired during the read.
      if (woken !== undefined) this.onWake(woken);
      return;
    }
    this.cursor = page.nextCursor;
    // The waiter may still be registered; the next read registers afresh.
    this.waiter?.cancel();
    this.waiter = undefined;
    if (this.sink.send(page.events, () => this.resume())) this.registerThenRead();
  }

  private resume(): void {
    if (!this.finished) this.registerThenRead();
  }

  private onReadFailed(err: unknown): void {
    this.reading = false;
    this.finish(err);
  }

  private finish(err: unknown): void {
    if (this.finished) return;
    this.finished = true;
    this.waiter?.cancel();
    this.waiter = undefined;
    this.sink.end(err);
  }
}
