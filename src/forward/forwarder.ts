// `forward` (design.md, "Forwarding to a local handler"): replays an address's queue into local handlers, like `stripe listen
// --forward-to` but resumable. Each target runs its own loop with its own named consumer
// (`forward:<target>`): it reads after its position, sends each matching event (a captured request
// as it came, any other as Event JSON), and moves its position past an event only after the
// handler's 2xx. Anything else is retried, 1 s doubling to 60 s, and nothing after that event is
// sent meanwhile, so a handler sees events in order. A target that is down holds back no other.
// With --resign, an event that did not verify is skipped (resign-policy.ts), its position passed.
// A page of another store epoch than the loop's (a restore: design.md, "Store epoch") makes it say so
// in one notice and read again from the start, skipping the event ids it sent (SENT_IDS in memory,
// the local position file's last ones across runs).
import { type Event, type EventPage, pageEpoch, type ReturnAddress } from '@return-address/client';
import { type EventMatch, eventMatches } from '../domain/event-match.js';
import { forwardConsumerName } from './consumer-name.js';
import { openPosition, type PositionStore } from './position.js';
import { RawBytesError, replayRequest } from './replay-request.js';
import { parseResign, type Resign, resignHeaders } from './resign.js';
import { resignRefusal } from './resign-policy.js';
import { sendReplay } from './send-request.js';

export interface ForwardTarget {
  /** The local handler, e.g. http://localhost:4000/webhooks; a captured request's sub-path and query follow it. */
  url: string;
  /** Event types this target gets: exact, or a prefix ending in `.*` (`github.*`); any of them. All when empty. */
  types?: string[];
  /** Dotted path → value, all must hold (design.md, "Agent toolkit and live view"). */
  match?: EventMatch;
}

export interface ForwardAttempt {
  target: string;
  /** The handler's HTTP status, or null when no answer came. */
  status: number | null;
  /** Why no answer came (refused, timed out). */
  error?: string;
  method: string;
  path: string;
  type: string;
  sequence: number;
  eventId: string;
  ms: number;
  /** When it failed: how long until the next attempt. */
  retryInMs?: number;
  /** Set when the event was not sent to this target (and the position moved past it): why. */
  skipped?: string;
}

export interface ForwardOptions {
  targets: ForwardTarget[];
  /** Replay from this sequence (inclusive): every target's position is set to N-1 first. */
  fromSequence?: number;
  /** Re-sign each request with this scheme and local secret ("github:SECRET" or parsed): only what verified (resign-policy.ts). */
  resign?: Resign | string;
  /** Re-sign events that did not verify too (forgeries included): for a handler that knows it. */
  resignUnverified?: boolean;
  /** Acknowledge each event after a target's 2xx. */
  ack?: boolean;
  /** Stops the forwarder: the attempt under way is abandoned and its event sent again next time. */
  signal?: AbortSignal;
  /** Called after every attempt (the CLI prints one line each). */
  onAttempt?: (attempt: ForwardAttempt) => void;
  /** Messages for a person: where positions are kept, read errors. */
  onNotice?: (message: string) => void;
  /** Where positions are kept when the service has no named consumers; in memory when absent. */
  positionFile?: string;
  /** How long a handler may take to answer one attempt; default 30 s. */
  attemptTimeoutMs?: number;
  /** Retry delays; default 1 s doubling to 60 s. */
  backoff?: { initialMs: number; maxMs: number };
  /** Stands in for Date.now when signing (tests). */
  now?: () => number;
}

export const DEFAULT_BACKOFF = { initialMs: 1000, maxMs: 60_000 };
const LONG_POLL_SECONDS = 25;
/** How many sent event ids a target's loop remembers, to skip them when a restore makes it read again. */
export const SENT_IDS = 10_000;

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(() => {
      signal.removeEventListener('abort', done);
      resolve();
    }, ms);
    const done = () => {
      clearTimeout(t);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
  });

/** Whether `type` is one of `types` (exact, or a prefix ending in `.*`); every type when `types` is empty. */
export function typeSelected(type: string, types: readonly string[] | undefined): boolean {
  if (types === undefined || types.length === 0) return true;
  return types.some((t) => (t.endsWith('.*') ? type.startsWith(t.slice(0, -1)) : type === t));
}

/** Forwards until `signal` aborts; resolves then. Throws only for what a retry cannot mend (bad options, changed raw bytes). */
export async function forward(ra: ReturnAddress, opts: ForwardOptions): Promise<void> {
  if (opts.targets.length === 0) throw new TypeError('forward needs at least one target');
  const targets = opts.targets.map((t) => {
    let url: URL;
    try {
      url = new URL(t.url);
    } catch {
      throw new TypeError(`target "${t.url}" is not a URL (e.g. http://localhost:4000/webhooks)`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`target "${t.url}" must be http:// or https://`);
    return { ...t, url, name: forwardConsumerName(url) };
  });
  const names = new Set(targets.map((t) => t.name));
  if (names.size !== targets.length) throw new TypeError('two targets have the same URL: give each handler once');
  const resign = typeof opts.resign === 'string' ? parseResign(opts.resign) : opts.resign;
  if (opts.fromSequence !== undefined && (!Number.isSafeInteger(opts.fromSequence) || opts.fromSequence < 1)) {
    throw new TypeError('fromSequence must be an integer ≥ 1');
  }
  const signal = opts.signal ?? new AbortController().signal;
  const ctx: LoopContext = {
    ra,
    signal,
    resign,
    resignUnverified: opts.resignUnverified === true,
    ack: opts.ack === true,
    onAttempt: opts.onAttempt ?? (() => {}),
    onNotice: opts.onNotice ?? (() => {}),
    timeoutMs: opts.attemptTimeoutMs ?? 30_000,
    backoff: opts.backoff ?? DEFAULT_BACKOFF,
    now: opts.now ?? Date.now,
    positionFile: opts.positionFile,
    after: opts.fromSequence === undefined ? undefined : opts.fromSequence - 1,
  };
  await Promise.all(targets.map((t) => targetLoop(ctx, t)));
}

/** A target as the loops hold it: its URL parsed and its consumer named. */
type Target = Omit<ForwardTarget, 'url'> & { url: URL; name: string };

interface LoopContext {
  ra: ReturnAddress;
  signal: AbortSignal;
  resign: Resign | undefined;
  resignUnverified: boolean;
  ack: boolean;
  onAttempt: (a: ForwardAttempt) => void;
  onNotice: (m: string) => void;
  timeoutMs: number;
  backoff: { initialMs: number; maxMs: number };
  now: () => number;
  positionFile: string | undefined;
  after: number | undefined;
}

/**
 * Runs `read` until it succeeds or the forwarder stops, waiting 1 s doubling to 60 s between
 * failures; `read` is told whether an attempt failed before (a service back from a restart).
 */
async function retryRead<T>(ctx: LoopContext, what: string, read: (failedBefore: boolean) => Promise<T>): Promise<T | undefined> {
  for (let delay = ctx.backoff.initialMs, failed = false; !ctx.signal.aborted; delay = Math.min(delay * 2, ctx.backoff.maxMs), failed = true) {
    try {
      return await read(failed);
    } catch (err) {
      if (ctx.signal.aborted) return undefined;
      if (err instanceof RawBytesError) throw err;
      ctx.onNotice(`${what} failed: ${(err as Error).message}; retrying in ${delay / 1000} s`);
      await sleep(delay, ctx.signal);
    }
  }
  return undefined;
}

async function targetLoop(ctx: LoopContext, target: Target): Promise<void> {
  const opened = await retryRead(ctx, `reading ${target.name}`, () =>
    openPosition(ctx.ra, target.name, ctx.positionFile, ctx.after, ctx.signal, (why) => ctx.onNotice(why)),
  );
  if (opened === undefined) return;
  const store: PositionStore = opened.store;
  let page: EventPage = opened.first;
  if (store.kind === 'server') ctx.onNotice(`${target.url.href}: position kept by the service as consumer ${target.name}`);
  const sent = new Set(store.handled);
  // Only a re-read after a new epoch skips sent ids: an event sent but not committed (a stopped run)
  // is sent again, as at-least-once says.
  let rereading = false;
  for (;;) {
    const now = pageEpoch(page)?.epoch;
    if (now !== undefined && store.epoch !== undefined && now !== store.epoch) {
      ctx.onNotice(
        `${target.url.href}: the store's epoch changed from ${store.epoch} to ${now} (the service was restored from a backup): ` +
          'reading again from the start, skipping the event ids already sent',
      );
      store.epoch = now;
      rereading = true;
      const again = await retryRead(ctx, `reading ${target.name}`, () => store.page(0, 0, ctx.signal));
      if (again === undefined) return;
      page = again;
      continue;
    }
    store.epoch ??= now;
    for (const event of page.events) {
      if (rereading && sent.has(event.id)) continue;
      if (typeSelected(event.type, target.types) && eventMatches(event, { match: target.match })) {
        const delivered = await deliverInOrder(ctx, target, event);
        if (!delivered) return; // stopped
        sent.add(event.id);
        if (sent.size > SENT_IDS) sent.delete(sent.values().next().value as string);
        store.remember(event.id);
        const committed = await retryRead(ctx, `storing ${target.name}'s position`, () => store.commit(event.sequence, ctx.signal));
        if (committed === undefined && ctx.signal.aborted) return;
      }
    }
    if (ctx.signal.aborted) return;
    const after = page.next_cursor;
    // After a failed read, the first one does not wait: a service back from a restore says its new
    // epoch at once instead of after a long-poll past the end of its (shorter) queue.
    const next = await retryRead(ctx, `reading ${target.name}`, (failed) => store.page(after, page.has_more || failed ? 0 : LONG_POLL_SECONDS, ctx.signal));
    if (next === undefined) return;
    page = next;
  }
}

/** Sends `event` until a 2xx (true) or the forwarder stops (false); true at once for an event it must skip. */
async function deliverInOrder(ctx: LoopContext, target: Target, event: Event): Promise<boolean> {
  const refusal = ctx.resign === undefined || ctx.resignUnverified ? null : resignRefusal(event);
  if (refusal !== null) {
    ctx.onAttempt({
      target: target.url.href,
      status: null,
      method: '-',
      path: '-',
      type: event.type,
      sequence: event.sequence,
      eventId: event.id,
      ms: 0,
      skipped: refusal,
    });
    return true;
  }
  const fetchRaw = async (url: string) => Buffer.from(await ctx.ra.rawBytes(url, { signal: ctx.signal }));
  const base = await retryRead(ctx, `fetching the raw bytes of ${event.id}`, () => replayRequest(event, target.url, fetchRaw));
  if (base === undefined) return false;
  for (let delay = ctx.backoff.initialMs; ; delay = Math.min(delay * 2, ctx.backoff.maxMs)) {
    if (ctx.signal.aborted) return false;
    // Signed at each attempt: a retry an hour later still carries a fresh timestamp.
    const headers = ctx.resign === undefined ? base.headers : resignHeaders(ctx.resign, base.headers, base.body, ctx.now(), `msg_${event.id}`);
    const started = performance.now();
    let status: number | null = null;
    let error: string | undefined;
    try {
      status = await sendReplay({ ...base, headers }, ctx.timeoutMs, ctx.signal);
    } catch (err) {
      if (ctx.signal.aborted) return false;
      error = (err as Error).message;
    }
    const ok = status !== null && status >= 200 && status < 300;
    ctx.onAttempt({
      target: target.url.href,
      status,
      ...(error === undefined ? {} : { error }),
      method: base.method,
      path: base.shownPath,
      type: event.type,
      sequence: event.sequence,
      eventId: event.id,
      ms: Math.round(performance.now() - started),
      ...(ok ? {} : { retryInMs: delay }),
    });
    if (ok) {
      if (ctx.ack) await retryRead(ctx, `acknowledging ${event.id}`, () => ctx.ra.ack(event.id));
      return true;
    }
    await sleep(delay, ctx.signal);
  }
}
