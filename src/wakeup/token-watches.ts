// Which open waits read with which read token, per address, in this process (design.md,
// "Credential rotation"). A wait that holds (long-poll, stream, waiting claim, their MCP forms)
// registers the identity of the token it was opened with once, for its whole life; a rotation's
// signal (this instance's rotation, or another's through the store's notifications) ends exactly
// the waits of the old token. Deliveries and wake-ups never look here: the cost of rotation is paid
// when it happens, not per event.
//
// A request authenticates (reads the row) before its wait registers, so a rotation can land in
// between; the identities rotated away lately are remembered (REMEMBER_MS, at most REMEMBER_MAX),
// and a wait that registers with one of them ends at once. Token identities are of random tokens
// and never recur, so remembering one can never end a wait of a newer token.

import type { TokenListener, Waiter } from '../domain/ports.js';

/** How long a rotated-away identity is remembered: far longer than any authentication-to-wait gap. */
export const REMEMBER_MS = 10 * 60_000;
/** At most this many remembered identities (the oldest forgotten first): bounded memory under any rate of rotations. */
export const REMEMBER_MAX = 10_000;

class TokenWatch implements Waiter {
  done = false;
  constructor(
    readonly owner: TokenWatches,
    readonly addressId: string,
    readonly identity: string,
    readonly listener: TokenListener,
  ) {}

  cancel(): void {
    if (this.done) return;
    this.done = true;
    this.owner.remove(this);
  }
}

const SETTLED: Waiter = { cancel() {} };

export class TokenWatches {
  private readonly byAddress = new Map<string, Set<TokenWatch>>();
  /** `addressId identity` -> when it was rotated away (epoch ms); insertion order is age order. */
  private readonly recent = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  watch(addressId: string, identity: string, listener: TokenListener): Waiter {
    if (this.isRecent(addressId, identity)) {
      listener.revoked();
      return SETTLED;
    }
    const w = new TokenWatch(this, addressId, identity, listener);
    let set = this.byAddress.get(addressId);
    if (!set) this.byAddress.set(addressId, (set = new Set()));
    set.add(w);
    return w;
  }

  /** Ends every watch of `identity` on the address, and remembers it for a late one. Idempotent. */
  revoked(addressId: string, identity: string): void {
    this.remember(`${addressId} ${identity}`);
    const set = this.byAddress.get(addressId);
    if (!set) return;
    for (const w of [...set]) {
      if (w.identity !== identity || w.done) continue;
      w.cancel();
      w.listener.revoked();
    }
  }

  /** Every address with a watch, and the identities watched (a resync re-checks them against the rows). */
  watched(): Map<string, Set<string>> {
    const out = new Map<string, Set<string>>();
    for (const [id, set] of this.byAddress) out.set(id, new Set([...set].map((w) => w.identity)));
    return out;
  }

  /** Open watches (tests, leak checks). */
  size(): number {
    let n = 0;
    for (const set of this.byAddress.values()) n += set.size;
    return n;
  }

  /** @internal Called by a watch as it is cancelled. */
  remove(w: TokenWatch): void {
    const set = this.byAddress.get(w.addressId);
    if (!set?.delete(w)) return;
    if (set.size === 0) this.byAddress.delete(w.addressId);
  }

  private isRecent(addressId: string, identity: string): boolean {
    const at = this.recent.get(`${addressId} ${identity}`);
    return at !== undefined && this.now() - at < REMEMBER_MS;
  }

  private remember(key: string): void {
    const now = this.now();
    this.recent.delete(key);
    this.recent.set(key, now);
    for (const [k, at] of this.recent) {
      if (this.recent.size <= REMEMBER_MAX && now - at < REMEMBER_MS) break;
      this.recent.delete(k);
    }
  }
}
