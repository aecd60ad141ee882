// A claim that may wait (POST …/claims with wait > 0): a Follow of the one follower
// (domain/follower.ts), like a long-poll, and no state machine of its own. Each read is a claim;
// a claim that leased events answers at once. One that leased nothing waits for a wake-up of its
// address (a new event, a nack: both notify, across instances too) or, by its registration's
// timeout, for the earliest moment the store said an event becomes claimable by time alone (a lease
// running out, a delayed nack ending), then claims again. So a lease that expires on any instance
// is seen within a timer's precision, with no background job.
//
// A read that leased events is kept before the follower sees it: a shutdown or a deadline that
// comes during that read still answers those leases instead of dropping them.
//
// A filtered claim examines one window of open events per read (claim-rules.ts,
// CLAIM_WINDOW_EVENTS), from a cursor: a window that leased nothing and has more after it is
// followed at once by the next; a claim that answers at once stops after SCAN_EVENTS events or
// SCAN_BYTES examined and answers nothing. A waiting claim that reached the last open event waits,
// and after a wake-up goes on from where it got to, so a delivery costs it one window of the new
// events, not a rescan of the queue. An event before the cursor can become claimable again only if
// it was leased before (a nack, a lease or a delay running out): each claim statement takes those
// too, wherever they are (storage/claim-sql.ts), so nothing is left behind the cursor.

import { SCAN_BYTES, SCAN_EVENTS } from '../domain/event-filter.js';
import { nextTurn } from '../domain/event-reads.js';
import { type AfterPage, type Follow, type FollowEnd, Follower } from '../domain/follower.js';
import type { WakeupHub } from '../domain/ports.js';
import type { ClaimBatch } from './claim-rules.js';

/** Called exactly once: an error (not_found, a store failure), or the batch to answer (maybe empty). Must not throw. */
export type ClaimCallback = (err: unknown, batch: ClaimBatch | undefined) => void;

const NOTHING: ClaimBatch = { claims: [], nextChangeAt: null, died: 0 };

export class ClaimWait implements Follow<ClaimBatch> {
  readonly waiterKind = 'claim' as const;
  private readonly follower: Follower<ClaimBatch>;
  private latest: ClaimBatch = NOTHING;
  /** A filtered claim's cursor: the last open event examined (0: from the first). */
  private after = 0;
  /** Open events and bytes examined since the claim began (a claim that answers at once stops at the scan's bounds). */
  private examined = 0;
  private examinedBytes = 0;
  private ended = false;

  constructor(
    hub: WakeupHub,
    addressId: string,
    private readonly claimOnce: (after: number) => Promise<ClaimBatch>,
    /** Epoch ms to wait until; undefined: claim once and answer. */
    private readonly deadline: number | undefined,
    private readonly now: () => number,
    private readonly callback: ClaimCallback,
    /** The reader's token hash: a rotation of it ends the wait (follower.ts). */
    readTokenHash?: Buffer,
  ) {
    this.follower = new Follower(hub, addressId, this, readTokenHash);
  }

  start(): void {
    this.follower.start(false);
  }

  /** The client went away. Leases a read is making now run out and are claimed again: at least once. */
  cancel(): void {
    this.ended = true;
    this.follower.cancel();
  }

  /** False once the claim was answered or its client went away: a statement for it would lease what nobody answers. */
  get live(): boolean {
    return !this.ended;
  }

  /** @internal Follow */
  async read(): Promise<ClaimBatch> {
    // A window after the first waits for the next turn of the event loop: a store that answers at
    // once (SQLite) otherwise ran a claim's walk over a long queue in one turn (8 claims over 40 MB
    // held deliveries beside them 0.7-1.6 s).
    if (this.examined > 0) await nextTurn();
    const batch = await this.claimOnce(this.after);
    if (batch.claims.length > 0 || this.latest.claims.length === 0) this.latest = batch;
    return batch;
  }

  /** @internal Follow */
  page(batch: ClaimBatch): AfterPage {
    if (batch.claims.length > 0) return 'done';
    const w = batch.window;
    if (w !== undefined) {
      this.after = w.examinedTo;
      this.examined += w.examined;
      this.examinedBytes += w.examinedBytes;
      if (w.more) {
        // The scan's bounds end a claim that answers at once; a waiting one goes on to its deadline.
        if (this.deadline === undefined) return this.examined >= SCAN_EVENTS || this.examinedBytes >= SCAN_BYTES ? 'done' : 'again';
        return this.now() >= this.deadline ? 'done' : 'again';
      }
    }
    return this.deadline === undefined || this.now() >= this.deadline ? 'done' : 'wait';
  }

  /** @internal Follow: until the deadline, or the next lease end or delay end if sooner. */
  waitMs(): number {
    const deadline = this.deadline ?? 0;
    const next = this.latest.nextChangeAt;
    return Math.max(0, (next !== null && next < deadline ? next : deadline) - this.now());
  }

  /** @internal Follow: a lease end or delay end came before the deadline: claim again. */
  timedOut(): boolean {
    return this.deadline !== undefined && this.now() < this.deadline;
  }

  /** @internal Follow */
  end(reason: FollowEnd, err?: unknown): void {
    this.ended = true;
    if (reason === 'failed') this.callback(err, undefined);
    else this.callback(undefined, this.latest);
  }
}
