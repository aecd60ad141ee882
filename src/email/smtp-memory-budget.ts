// Message bytes held in memory by all SMTP sessions together (SMTP_MAX_BUFFERED_BYTES). Each
// message may be MAX_EMAIL_BYTES, and 500 clients of 10 MiB would be 5 GB: past this budget a
// message is drained, not kept, and refused with 452 (try again later), which every MTA retries.
import { ByteBudget } from '../domain/byte-budget.js';

/** Default of SMTP_MAX_BUFFERED_BYTES. */
export const DEFAULT_MAX_BUFFERED_BYTES = 256 * 1024 * 1024;

export class SmtpMemoryBudget extends ByteBudget {
  constructor(max: number = DEFAULT_MAX_BUFFERED_BYTES) {
    super(max);
  }
}
