// The provisioning rate limit's fixed windows (design.md, "Create address and its rate limit"): one rule, which
// both stores apply in their own transaction (SQLite with `countAttempt`, PostgreSQL in one upsert
// that test/storage/store-contract.test.ts and store-contract-rate-window.test.ts hold to the same cases).
//
// A window never moves back. An attempt stamped before the stored window (another instance's clock
// lags, or this clock was stepped back) counts against the stored window instead of reopening an
// old one, so a lagging clock can neither reset nor dodge the limit.

/** The longest window CREATE_RATE_WINDOW_SECONDS may set; rows older than this cannot matter. */
export const MAX_RATE_WINDOW_MS = 24 * 3600 * 1000;

export interface RateWindowRow {
  windowStart: number;
  count: number;
}

export function windowStartOf(now: number, windowMs: number): number {
  return now - (now % windowMs);
}

/** Whole seconds until the window that started at `windowStart` ends, at least 1. */
export function retryAfterSeconds(windowStart: number, windowMs: number, now: number): number {
  return Math.max(1, Math.ceil((windowStart + windowMs - now) / 1000));
}

/**
 * One creation attempt at `now` against the stored row: the row to store when it is allowed, or
 * the seconds to wait. A refused attempt changes nothing.
 */
export function countAttempt(
  stored: RateWindowRow | undefined,
  rate: { limit: number; windowMs: number; now: number },
): { allowed: true; row: RateWindowRow } | { allowed: false; retryAfterSeconds: number } {
  const attemptWindow = windowStartOf(rate.now, rate.windowMs);
  if (stored === undefined || attemptWindow > stored.windowStart) return { allowed: true, row: { windowStart: attemptWindow, count: 1 } };
  if (stored.count >= rate.limit) return { allowed: false, retryAfterSeconds: retryAfterSeconds(stored.windowStart, rate.windowMs, rate.now) };
  return { allowed: true, row: { windowStart: stored.windowStart, count: stored.count + 1 } };
}

/** Rate-window rows that started before this can be deleted. */
export function staleRateWindowsBefore(now: number): number {
  return now - MAX_RATE_WINDOW_MS;
}
