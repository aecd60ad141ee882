// The byte budget of one MCP request: every list_events and wait_for_event of a request
// (a JSON-RPC batch holds up to MAX_MCP_BATCH calls) draws the events it may return from one
// budget, so a batch of ten list_events over large events holds two pages' worth, not ten (ten
// over a 314 MB event ended the process). Each call reserves what its page may hold before it
// reads, and gives back what it did not use; a call that cannot get room for one whole event is a
// tool error asking for a request of its own. No call is let past the budget.
import { ApiError } from '../domain/errors.js';

export class ResultBudget {
  constructor(
    private remaining: number,
    private readonly maxEventBytes: number,
  ) {}

  /** Reserves up to `want` bytes (at least one event's worth), or throws when even that is gone. */
  take(want: number): number {
    const granted = Math.min(want, this.remaining);
    if (granted < this.maxEventBytes) {
      throw new ApiError(
        'invalid_request',
        "This MCP request's results already hold as many event bytes as one request may carry " +
          `(two pages, MAX_EVENT_BYTES = ${this.maxEventBytes} each at least): send this call in a request of its own.`,
      );
    }
    this.remaining -= granted;
    return granted;
  }

  /** Gives back what a call reserved but did not use. */
  give(bytes: number): void {
    this.remaining += Math.max(0, bytes);
  }
}

/** The stored JSON bytes of events (data and metadata), as the stores count them toward a page. */
export const storedBytes = (events: readonly { data: string; metadata: string | null }[]): number =>
  events.reduce((n, e) => n + Buffer.byteLength(e.data) + (e.metadata === null ? 0 : Buffer.byteLength(e.metadata)), 0);
