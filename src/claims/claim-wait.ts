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

  constructor(
    hub: WakeupHub,
    addressId: string,
    private readonly claimOnce: () => Promise<ClaimBatch>,
    /** Epoch ms to wait until; undefined: claim once and answer. */
    private readonly deadline: number | undefined,
    private readonly now: () => number,
    private readonly callback: ClaimCallback,
  ) {
    this.follower = new Follower(hub, addressId, this);
  }

  start(): void {
    this.follower.start(false);
  }

  /** The client went away. Leases a read is making now run out and are claimed again: at least once. */
  cancel(): void {
    this.follower.cancel();
  }

  /** @internal Follow */
  async read(): Promise<ClaimBatch> {
    const batch = await this.claimOnce();
    if (batch.claims.length > 0 || this.latest.claims.length === 0) this.latest = batch;
    return batch;
  }

  /** @internal Follow */
  page(batch: ClaimBatch): AfterPage {
    return batch.claims.length > 0 || this.deadline === undefined || this.now() >= this.deadline ? 'done' : 'wait';
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
    if (reason === 'failed') this.callback(err, undefined);
    else this.callback(undefined, this.latest);
  }
}
