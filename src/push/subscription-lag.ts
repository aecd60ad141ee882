// How many sequences one subscription is behind its address (design.md, "Push subscriptions", lag in
// events), kept by its runner as it works so a scrape reads numbers, never the store: the position
// as the runner reads and moves it, and the address's last sequence from the runner's pages (a page
// that ends the queue says where it ends), or from one read of it (the epoch store's lastSequence)
// when a page is not the end or an event arrives while the runner is busy (an attempt held by a slow
// receiver, a retry's wait), at most once per HEAD_REFRESH_MS.
import type { WakeupHub } from '../domain/ports.js';

/** The address's last sequence is read at most this often per subscription. */
const HEAD_REFRESH_MS = 1000;
/** The hub registration is renewed this often (a kept registration still has a timer). */
const WATCH_MS = 300_000;

export type LastSequence = (addressId: string) => Promise<number | null>;

export class SubscriptionLag {
  private position = 0;
  private head = 0;
  /** The runner waits on the hub with nothing to send: a new event makes it read a page, which tells the head. */
  idle = false;
  private closed = false;
  private watch: { cancel(): void } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private reading = false;
  private stale = false;

  constructor(
    private readonly addressId: string,
    private readonly hub: WakeupHub,
    private readonly lastSequence: LastSequence | undefined,
  ) {
    this.register();
  }

  /** Sequences after the position, as far as the runner knows (exact within about HEAD_REFRESH_MS). */
  get events(): number {
    return Math.max(0, this.head - this.position);
  }

  /** The position as read, or moved past a delivered or passed-over event. */
  at(position: number): void {
    this.position = position;
    this.sawSequence(position);
  }

  /** A page read after the position: its last event, and where the queue ends when the page is its end. */
  page(page: { events: { sequence: number }[]; nextCursor: number; hasMore: boolean }): void {
    if (page.events.length > 0) this.sawSequence(page.events.at(-1)!.sequence);
    if (page.hasMore) this.refresh();
    else this.sawSequence(page.nextCursor);
  }

  close(): void {
    this.closed = true;
    this.watch?.cancel();
    clearTimeout(this.timer);
  }

  private sawSequence(sequence: number): void {
    if (sequence > this.head) this.head = sequence;
  }

  /** A kept hub registration: an event while the runner is busy refreshes the head. */
  private register(): void {
    if (this.closed) return;
    this.watch = this.hub.register(
      this.addressId,
      WATCH_MS,
      {
        wake: (reason) => {
          if (reason === 'changed' && !this.idle) this.refresh();
          else if (reason === 'timeout') this.register();
        },
      },
      true,
    );
  }

  /** One read of the last sequence: at most one in flight and one per HEAD_REFRESH_MS; a request meanwhile runs after. */
  private refresh(): void {
    const read = this.lastSequence;
    if (!read || this.closed) return;
    if (this.reading || this.timer) {
      this.stale = true;
      return;
    }
    this.reading = true;
    read(this.addressId)
      .then((n) => {
        if (n !== null) this.sawSequence(n);
      })
      .catch(() => {}) // a metric: the next page or event corrects it
      .finally(() => {
        this.reading = false;
        if (this.closed) return;
        this.timer = setTimeout(() => {
          this.timer = undefined;
          if (this.stale) {
            this.stale = false;
            this.refresh();
          }
        }, HEAD_REFRESH_MS);
        this.timer.unref();
      });
  }
}
