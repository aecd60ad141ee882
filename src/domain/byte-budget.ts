// Bytes held in memory by every request of one kind together: SMTP messages being received
// (SMTP_MAX_BUFFERED_BYTES) and capture bodies being received (MAX_INFLIGHT_CAPTURE_BYTES). One
// process-wide count per kind bounds what many slow or paused senders can hold at once, which a
// per-request byte limit alone does not (docs/design.md, "Bounded work").
export class ByteBudget {
  #held = 0;

  constructor(readonly max: number) {}

  get held(): number {
    return this.#held;
  }

  /** Takes `bytes` when they fit; false (nothing taken) when they would pass the budget. */
  tryTake(bytes: number): boolean {
    if (this.#held + bytes > this.max) return false;
    this.#held += bytes;
    return true;
  }

  /** Takes `bytes` whatever the budget says (e.g. a message alone always gets through). */
  take(bytes: number): void {
    this.#held += bytes;
  }

  release(bytes: number): void {
    this.#held -= bytes;
  }
}
