// Waiters for long-polls, per address, in this process.
//
// A wake-up is a hint; the database is the truth. A long-poll registers its waiter first, then
// re-reads the queue, then waits, and re-reads after every wake: an event committed between the
// read and the wait has already signalled the registered waiter, so nothing slips through.
//
// Each registration is one-shot: its listener is called exactly once, with the first of 'changed'
// (an event or a deletion on its address, from this instance or, through the store's
// notifications, another), 'timeout' or 'shutdown', unless it is cancelled first (then never).
// A kept registration (a filtered follower that checks new events in memory, follower.ts) is
// called with 'changed' without being settled: it stays, with its timer, until it ends otherwise.
// Settling or cancelling removes it from the map, so idle addresses cost nothing and `size()` is
// the exact number of open long-polls.
//
// Callbacks, not promises: a held long-poll is one registration object and its timer, instead of
// a promise, its reactions and the suspended async frames awaiting it. With 10,000 polls held
// that difference is most of what the service adds to the socket's own cost (bench/README.md).

import { tokenIdentity } from '../domain/credentials.js';
import type { AddressRecord } from '../domain/model.js';
import type { TokenListener, Waiter, WakeListener, WakeReason, WakeupHub } from '../domain/ports.js';
import { TokenWatches } from './token-watches.js';

class Registration implements Waiter {
  timer: NodeJS.Timeout | undefined;
  done = false;

  constructor(
    readonly hub: InProcessWakeupHub,
    readonly addressId: string,
    readonly listener: WakeListener,
    /** 'changed' calls the listener and leaves it registered (WakeupHub.register's `keep`). */
    readonly keep: boolean,
  ) {}

  /** Something changed on its address. */
  changed(): void {
    if (this.done) return;
    if (this.keep) this.listener.wake('changed');
    else this.settle('changed');
  }

  settle(reason: WakeReason): void {
    if (this.done) return;
    this.release();
    this.listener.wake(reason);
  }

  cancel(): void {
    if (!this.done) this.release();
  }

  private release(): void {
    this.done = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.hub.remove(this);
  }
}

// One function for every timer, with the registration as its argument: no closure per waiter.
function onTimeout(r: Registration): void {
  r.settle('timeout');
}

const SETTLED: Waiter = { cancel() {} };

export class InProcessWakeupHub implements WakeupHub {
  private readonly byAddress = new Map<string, Set<Registration>>();
  private count = 0;
  private closing = false;
  private readonly tokens = new TokenWatches();

  /**
   * Registers a waiter whose listener is woken after at most `timeoutMs`. While the hub is shutting
   * down, the listener is woken with 'shutdown' before this returns.
   */
  register(addressId: string, timeoutMs: number, listener: WakeListener, keep = false): Waiter {
    if (this.closing) {
      listener.wake('shutdown');
      return SETTLED;
    }
    const r = new Registration(this, addressId, listener, keep);
    let set = this.byAddress.get(addressId);
    if (!set) this.byAddress.set(addressId, (set = new Set()));
    set.add(r);
    this.count++;
    r.timer = setTimeout(onTimeout, Math.max(0, timeoutMs), r);
    return r;
  }

  /** Something changed on this address (new event, deletion): every waiter re-reads. */
  notify(addressId: string): void {
    const set = this.byAddress.get(addressId);
    if (!set) return;
    for (const r of [...set]) r.changed();
  }

  /** A wait opened with this read token ends when it is rotated away (WakeupHub.watchToken). */
  watchToken(addressId: string, readTokenHash: Buffer, listener: TokenListener): Waiter {
    return this.tokens.watch(addressId, tokenIdentity(readTokenHash), listener);
  }

  /**
   * The read token named `identity` (credentials.ts, tokenIdentity) of this address was rotated
   * away, here or on another instance: every wait opened with it ends, and one that registers late
   * (authenticated just before the rotation) ends as it registers.
   */
  tokenRevoked(addressId: string, identity: string): void {
    this.tokens.revoked(addressId, identity);
  }

  /**
   * After a lost notification connection (a rotation elsewhere may not have been heard): reads the
   * row of every address with a watched token and ends the waits of tokens it no longer holds. A
   * watch that existed before the read was opened with a token checked before it, and tokens never
   * recur, so a differing row means that token was rotated away. A deleted address is left to the
   * re-read every waiter makes now (404).
   */
  async recheckTokens(read: (addressId: string) => Promise<AddressRecord | null>): Promise<void> {
    for (const [addressId, identities] of this.tokens.watched()) {
      const row = await read(addressId);
      if (row === null) continue;
      const current = tokenIdentity(row.readTokenHash);
      for (const identity of identities) if (identity !== current) this.tokens.revoked(addressId, identity);
    }
  }

  /** Open waits watching their read token (tests, leak checks). */
  tokenWatches(): number {
    return this.tokens.size();
  }

  /** Wakes every waiter, e.g. after a lost notification connection is back (changes may be missed). */
  notifyAll(): void {
    for (const set of [...this.byAddress.values()]) for (const r of [...set]) r.changed();
  }

  /** Ends every wait with 'shutdown' and makes later registrations settle at once. */
  shutdown(): void {
    this.closing = true;
    for (const set of [...this.byAddress.values()]) for (const r of [...set]) r.settle('shutdown');
  }

  /** Open long-polls right now (leak checks, metrics). */
  size(): number {
    return this.count;
  }

  /** Open waiters by kind (`kindOf` names a listener's kind), for /metrics: O(waiters), at scrape time only. */
  countByKind(kindOf: (listener: WakeListener) => string): Map<string, number> {
    const counts = new Map<string, number>();
    for (const set of this.byAddress.values()) {
      for (const r of set) {
        const kind = kindOf(r.listener);
        counts.set(kind, (counts.get(kind) ?? 0) + 1);
      }
    }
    return counts;
  }

  /** @internal Called by a registration as it settles or is cancelled. */
  remove(r: Registration): void {
    const set = this.byAddress.get(r.addressId);
    if (!set?.delete(r)) return;
    this.count--;
    if (set.size === 0) this.byAddress.delete(r.addressId);
  }
}
