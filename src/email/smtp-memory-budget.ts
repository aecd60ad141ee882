// Message bytes held in memory by all SMTP sessions together (SMTP_MAX_BUFFERED_BYTES). Each
// message may be MAX_EMAIL_BYTES, and 500 clients of 10 MiB would be 5 GB: past this budget a
// message is drained, not kept, and refused with 452 (try again later), which every MTA retries.

/** Default of SMTP_MAX_BUFFERED_BYTES. */
export const DEFAULT_MAX_BUFFERED_BYTES = 256 * 1024 * 1024;

export class SmtpMemoryBudget {
  #held = 0;

  constructor(readonly max: number = DEFAULT_MAX_BUFFERED_BYTES) {}

  get held(): number {
    return this.#held;
  }

  /** Takes `bytes` when they fit; false (nothing taken) when they would pass the budget. */
  tryTake(bytes: number): boolean {
    if (this.#held + bytes > this.max) return false;
    this.#held += bytes;
    return true;
  }

  /** Takes `bytes` whatever the budget says (a message alone always gets through). */
  take(bytes: number): void {
    this.#held += bytes;
  }

  release(bytes: number): void {
    this.#held -= bytes;
  }
}
