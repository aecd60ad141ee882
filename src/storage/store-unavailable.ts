// Honest status (design.md, "Bounded work"): a store that cannot write, or cannot be reached, is a temporary
// condition of the service, not a bug: the caller is told 503 `unavailable` with Retry-After (never
// 500), and /readyz is not ok while it lasts. This recognises those failures among the errors the
// two backends throw, by their documented codes, never by a message alone.
import { ApiError } from '../domain/errors.js';
import { StoreClosedError } from '../domain/ports.js';

/** What a client told `unavailable` waits before retrying. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/** SQLite result codes (better-sqlite3's SqliteError.code) that mean the file cannot be written now. */
const SQLITE_UNAVAILABLE = /^SQLITE_(FULL|IOERR|READONLY|BUSY|LOCKED|CANTOPEN|NOMEM|PROTOCOL)/;
/**
 * PostgreSQL SQLSTATE classes and codes: 08 connection exception, 53 insufficient resources (disk
 * full, out of memory, too many connections), 57P01-57P05 shutdown and crash recovery, 57014 a
 * statement cancelled by statement_timeout (an overloaded server), 25006 a read-only server (a
 * standby, or default_transaction_read_only), 58 system errors (I/O).
 */
const PG_UNAVAILABLE = /^(08...|53...|57P0[1-5]|57014|25006|58...)$/;
/** Errors of the operating system reaching a file or a socket: the disk or the database is not there. */
const OS_UNAVAILABLE = new Set([
  'ENOSPC',
  'EDQUOT',
  'EFBIG',
  'EIO',
  'EROFS',
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);
/** pg's own errors for a lost or unobtainable connection (they carry no code). */
const PG_CONNECTION_LOST =
  /^(Connection terminated|timeout exceeded when trying to connect|Client was closed|Client has encountered a connection error|Connection terminated due to connection timeout)/;

/** Whether `err` (or an error it was caused by) says the store cannot be reached or written right now. */
export function isStoreUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof StoreClosedError) return true;
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') {
      if (SQLITE_UNAVAILABLE.test(code) || PG_UNAVAILABLE.test(code) || OS_UNAVAILABLE.has(code)) return true;
      // A socket reset (a read on a connection to the database); a client's aborted request has no syscall.
      if (code === 'ECONNRESET' && typeof (e as { syscall?: unknown }).syscall === 'string') return true;
    }
    if (PG_CONNECTION_LOST.test(e.message)) return true;
  }
  return false;
}

/** The 503 a client is answered for such a failure. */
export function unavailableError(cause: unknown): ApiError {
  return new ApiError(
    'unavailable',
    'Storage is unavailable right now (it cannot be reached or written); nothing was stored by this request. ' +
      `Retry after ${UNAVAILABLE_RETRY_AFTER_SECONDS} s.`,
    { 'retry-after': String(UNAVAILABLE_RETRY_AFTER_SECONDS) },
    { cause },
  );
}

/**
 * When the store last failed that way, as this process saw it: /readyz stays not ok for a while after
 * such a failure, since a store can answer a read (SELECT 1) while it cannot write.
 */
export class WriteHealth {
  private lastFailure = Number.NEGATIVE_INFINITY;
  constructor(
    private readonly windowMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}
  failed(): void {
    this.lastFailure = this.now();
  }
  /**
   * The store was just proven reachable and writable by a check that started at `since` (readiness):
   * a failure before that start is over, so readiness follows the store's return at once instead
   * of waiting out the window (a load balancer that took every instance out sends no write that
   * could prove it otherwise).
   */
  provenSince(since: number): void {
    if (this.lastFailure < since) this.lastFailure = Number.NEGATIVE_INFINITY;
  }
  /** Milliseconds since the last failure, when it is recent; undefined otherwise. */
  recentFailure(): number | undefined {
    const age = this.now() - this.lastFailure;
    return age < this.windowMs ? age : undefined;
  }
}

/**
 * One warning per `intervalMs` for a failure that repeats (every request while the store is away):
 * the first is logged at once, the ones within the interval are counted and the next line says how
 * many were left out (`repeated`). An outage then writes a few lines, not one per request.
 */
export class RepeatedWarning {
  private last = Number.NEGATIVE_INFINITY;
  private suppressed = 0;
  constructor(
    private readonly intervalMs = 5_000,
    private readonly now: () => number = Date.now,
  ) {}
  report(log: { warn(obj: object, msg: string): void }, obj: object, msg: string): void {
    const t = this.now();
    if (t - this.last < this.intervalMs) {
      this.suppressed++;
      return;
    }
    log.warn(this.suppressed > 0 ? { ...obj, repeated: this.suppressed, intervalMs: this.intervalMs } : obj, msg);
    this.last = t;
    this.suppressed = 0;
  }
}
