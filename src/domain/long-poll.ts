// One read of the queue that may be held: GET /api/v1/addresses/{id}/events with wait > 0, and MCP's list_events and
// wait_for_event through ReturnAddressService.listEvents.
//
// The waiting itself is the Follower's (follower.ts; design.md, "The wakeup hub and followers"): read; if nothing is after
// the cursor, register a waiter, then re-read, then wait; after every 'changed', register again
// and re-read. This file only says what a page means to a poll: events (or a scan that reached its
// bound, has_more) answer at once; nothing waits, from where the read got to, until the deadline.
//
// A poll that is waiting holds this object, its follower, a hub registration and a timer, and no
// promise, no suspended async frame and no AbortController.
import type { Screened } from './event-reads.js';
import { type AfterPage, type Follow, type FollowEnd, Follower } from './follower.js';
import type { Page } from './model.js';
import type { WakeupHub } from './ports.js';

/** Asks whether the events after a cursor hold anything for this reader's filter (EventReads.screen). */
export type ScreenAfter = (after: number, target: Screened) => void;

/**
 * The longest long-poll a client may ask for (the `wait` of GET …/events and of a claim), in seconds.
 * Below the ~30 s at which proxies and HTTP clients commonly cut an idle request; the socket timeout
 * (config.ts) must exceed it.
 */
export const MAX_WAIT_SECONDS = 25;

/**
 * Called exactly once: with an error (the address is gone: not_found; or the store failed), or
 * with the page to answer. Must not throw: it runs from timers and hub notifications.
 */
export type PollCallback = (err: unknown, page: Page | undefined) => void;

export class LongPoll implements Follow<Page>, Screened {
  readonly waiterKind = 'long_poll' as const;
  /** @internal Follow: only a filtered poll screens its changes. */
  readonly screen: (() => void) | undefined;
  private readonly follower: Follower<Page>;
  /**
   * The latest page read: what a timeout, a shutdown or cancel() answers. Its nextCursor is where
   * the next read starts: with a filter, an empty page has still examined events up to there.
   */
  private latest: Page;

  constructor(
    hub: WakeupHub,
    addressId: string,
    private readonly readAfter: (after: number) => Promise<Page>,
    after: number,
    /** Epoch ms to wait until; undefined for a plain read. */
    private readonly deadline: number | undefined,
    private readonly now: () => number,
    private readonly callback: PollCallback,
    /** Given for a filtered poll: its changes are screened, not read (follower.ts). */
    screenAfter?: ScreenAfter,
    /** The reader's token hash: a rotation of it ends the wait (follower.ts). */
    readTokenHash?: Buffer,
  ) {
    this.latest = { events: [], nextCursor: after, hasMore: false };
    this.screen = screenAfter === undefined ? undefined : () => screenAfter(this.latest.nextCursor, this);
    this.follower = new Follower(hub, addressId, this, readTokenHash);
  }

  /** @internal Screened: nothing after the cursor passed the filter up to `cursor`, or (undefined) read. */
  screened(cursor: number | undefined): void {
    if (cursor !== undefined && cursor > this.latest.nextCursor) this.latest = { events: [], nextCursor: cursor, hasMore: false };
    this.follower.screened(cursor === undefined);
  }

  start(): void {
    this.follower.start(false);
  }

  /** The client went away: stop waiting and answer the latest (empty) page. Idempotent. */
  cancel(): void {
    this.follower.cancel();
  }

  /** @internal Follow */
  read(): Promise<Page> {
    return this.readAfter(this.latest.nextCursor);
  }

  /** @internal Follow */
  page(page: Page): AfterPage {
    this.latest = page;
    return page.events.length > 0 || page.hasMore || this.deadline === undefined ? 'done' : 'wait';
  }

  /** @internal Follow */
  waitMs(): number {
    return (this.deadline ?? 0) - this.now();
  }

  /** @internal Follow: the deadline has come. */
  timedOut(): boolean {
    return false;
  }

  /** @internal Follow */
  end(reason: FollowEnd, err?: unknown): void {
    if (reason === 'failed') this.callback(err, undefined);
    else this.callback(undefined, this.latest);
  }
}
