// Waiters for long-polls, per address, in this process.
//
// A wake-up is a hint; the database is the truth. A long-poll registers its waiter first, then
// re-reads the queue, then waits, and re-reads after every wake: an event committed between the
// read and the wait has already signalled the registered waiter, so nothing slips through.
//
// Each waiter is one-shot and settles exactly once, with the first of: 'changed' (an event or a
// deletion on its address, from this instance or, through the store's notifications, another),
// 'timeout', 'aborted' (the client went away) or 'shutdown'. Settling removes it from the map, so
// idle addresses cost nothing and `size()` is the exact number of open long-polls.

export type WakeReason = 'changed' | 'timeout' | 'aborted' | 'shutdown';

export interface Waiter {
  /** Settles once; the waiter is deregistered by then. */
  readonly settled: Promise<WakeReason>;
  /** Deregisters without waiting (idempotent). */
  cancel(): void;
}

interface Entry {
  addressId: string;
  settle: (reason: WakeReason) => void;
}

export class WakeupHub {
  private readonly byAddress = new Map<string, Set<Entry>>();
  private count = 0;
  private closing = false;

  /** Registers a waiter that settles after at most `timeoutMs`, or at once if the hub is shutting down. */
  register(addressId: string, timeoutMs: number, signal?: AbortSignal): Waiter {
    let entry!: Entry;
    let timer: NodeJS.Timeout | undefined;
    let done = false;
    const onAbort = () => entry.settle('aborted');
    const settled = new Promise<WakeReason>((resolve) => {
      entry = {
        addressId,
        settle: (reason) => {
          if (done) return;
          done = true;
          if (timer !== undefined) clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          this.remove(entry);
          resolve(reason);
        },
      };
    });
    if (this.closing) {
      done = true;
      return { settled: Promise.resolve('shutdown'), cancel: () => {} };
    }
    if (signal?.aborted) {
      done = true;
      return { settled: Promise.resolve('aborted'), cancel: () => {} };
    }
    let set = this.byAddress.get(addressId);
    if (!set) this.byAddress.set(addressId, (set = new Set()));
    set.add(entry);
    this.count++;
    timer = setTimeout(() => entry.settle('timeout'), Math.max(0, timeoutMs));
    signal?.addEventListener('abort', onAbort, { once: true });
    return { settled, cancel: () => entry.settle('aborted') };
  }

  /** Something changed on this address (new event, deletion): every waiter re-reads. */
  notify(addressId: string): void {
    const set = this.byAddress.get(addressId);
    if (!set) return;
    for (const e of [...set]) e.settle('changed');
  }

  /** Wakes every waiter, e.g. after a lost notification connection is back (changes may be missed). */
  notifyAll(): void {
    for (const set of [...this.byAddress.values()]) for (const e of [...set]) e.settle('changed');
  }

  /** Ends every wait with 'shutdown' and makes later registrations settle at once. */
  shutdown(): void {
    this.closing = true;
    for (const set of [...this.byAddress.values()]) for (const e of [...set]) e.settle('shutdown');
  }

  /** Open long-polls right now (leak checks, metrics). */
  size(): number {
    return this.count;
  }

  private remove(entry: Entry): void {
    const set = this.byAddress.get(entry.addressId);
    if (!set || !set.delete(entry)) return;
    this.count--;
    if (set.size === 0) this.byAddress.delete(entry.addressId);
  }
}
