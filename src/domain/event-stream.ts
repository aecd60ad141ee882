// One live stream of an address's queue (GET …/events/stream): every event after a cursor, in
// sequence order and without a gap, for as long as the client stays, also when other instances
// append (their notifications reach the same hub).
//
// The waiting is the Follower's (follower.ts; design.md, "The wakeup hub and followers"), with a registration before every
// read: events read are handed to the sink and the cursor moves to the last one examined, then it
// registers and reads again; an empty read waits for the waiter. This file says what a page means
// to a stream: send it, and read on (or hold while the sink's buffer is full: nothing is read until
// it drains, so a client that does not read holds at most one page in memory). The waiter's timeout
// is the heartbeat: each one sends a comment and re-reads. 'shutdown' ends the stream; so does the
// address going away (the read fails with not_found) or a store failure, both passed to end().
import type { Screened } from './event-reads.js';
import { type AfterPage, type Follow, type FollowEnd, Follower } from './follower.js';
import type { ScreenAfter } from './long-poll.js';
import type { EventRecord, Page } from './model.js';
import type { WakeupHub } from './ports.js';

export interface StreamSink {
  /** Writes the events; false when the client's buffer is full: then call `resume` once it drains (not before returning). */
  send(events: EventRecord[], resume: () => void): boolean;
  /** Nothing happened for a heartbeat interval. */
  heartbeat(): void;
  /** The stream is over: `err` is why (not_found when the address was deleted), undefined on shutdown. Called once. */
  end(err: unknown): void;
}

export class EventStream implements Follow<Page>, Screened {
  readonly waiterKind = 'stream' as const;
  /** @internal Follow: only a filtered stream screens its changes. */
  readonly screen: (() => void) | undefined;
  private readonly follower: Follower<Page>;
  private readonly resume = () => this.follower.resume();

  constructor(
    hub: WakeupHub,
    addressId: string,
    private readonly readAfter: (after: number) => Promise<Page>,
    private cursor: number,
    private readonly heartbeatMs: number,
    private readonly sink: StreamSink,
    /** Given for a filtered stream: its changes are screened, not read (follower.ts). */
    screenAfter?: ScreenAfter,
    /** The reader's token hash: a rotation of it ends the stream (follower.ts). */
    readTokenHash?: Buffer,
  ) {
    this.screen = screenAfter === undefined ? undefined : () => screenAfter(this.cursor, this);
    this.follower = new Follower(hub, addressId, this, readTokenHash);
  }

  /** @internal Screened: nothing after the cursor passed the filter up to `cursor`, or (undefined) read. */
  screened(cursor: number | undefined): void {
    if (cursor !== undefined && cursor > this.cursor) this.cursor = cursor;
    this.follower.screened(cursor === undefined);
  }

  /** The sequence of the last event examined (with a filter, not always one handed to the sink), or the starting cursor. */
  get position(): number {
    return this.cursor;
  }

  start(): void {
    this.follower.start(true);
  }

  /** The client went away: stop without calling the sink. Idempotent. */
  cancel(): void {
    this.follower.cancel();
  }

  /** @internal Follow */
  read(): Promise<Page> {
    return this.readAfter(this.cursor);
  }

  /** @internal Follow */
  page(page: Page): AfterPage {
    this.cursor = page.nextCursor;
    // A filtered scan that reached its bound without a match reads on at once.
    if (page.events.length === 0) return page.hasMore ? 'again' : 'wait';
    return this.sink.send(page.events, this.resume) ? 'again' : 'hold';
  }

  /** @internal Follow */
  waitMs(): number {
    return this.heartbeatMs;
  }

  /** @internal Follow: an idle heartbeat interval. */
  timedOut(): boolean {
    this.sink.heartbeat();
    return true;
  }

  /** @internal Follow */
  end(reason: FollowEnd, err?: unknown): void {
    if (reason === 'cancelled') return;
    this.sink.end(reason === 'failed' ? err : undefined);
  }
}
