// The read loops: consume() (every event at-least-once, across a restore), events() (a walk to the
// queue's end) and waitFor() (the first matching event). Each is a function of the client, which
// keeps its methods as one-line calls of these.
import { MAX_WAIT_SECONDS, retrying, sleep } from './http.js';
import { pageEpoch } from './pages.js';
import type { ConsumeOptions, Event, EventsOptions, LoopClient, WaitOptions, WaitResult } from './types.js';

/** How many handled event ids consume() remembers, to skip them when a restore makes it read again. */
const HANDLED_IDS = 10_000;

/**
 * At-least-once: hands each event (matching the filter), in sequence order, to `handler`; once it
 * resolves, acknowledges the event (unless `ack: false`) and commits the position (this client's
 * `cursor` and `onCommit`, or the named consumer's on the service, which the next read confirms).
 * A handler that throws is retried with backoff (1 s doubling to 60 s) on the same event: nothing
 * is skipped and the order holds. A crash re-delivers what was not committed: dedupe by event id.
 */
export async function consume(ra: LoopClient, handled: Set<string>, handler: (event: Event) => unknown, opts: ConsumeOptions = {}): Promise<void> {
  const named = opts.consumer !== undefined;
  let position: number | undefined = opts.after ?? (named ? undefined : ra.cursor);
  const retryDelay = opts.retryDelayMs ?? 1000;
  // Only a re-read after a new epoch skips handled ids: an event handled but not committed (a
  // stopped run) comes again, as at-least-once says.
  let skipHandled = false;
  for (;;) {
    if (opts.signal?.aborted) return;
    const wait = opts.idleSeconds ?? MAX_WAIT_SECONDS;
    // A consumer reads one event a page: asking for the next one is what commits the last. After a
    // failed read (the service down, restarting, restored) the next does not long-poll, when running
    // until stopped: a service back from a restore says its new epoch at once, not after a long-poll
    // past the end of its shorter queue. (With idleSeconds, a read that did not wait would end the run.)
    const page = await retrying(
      (failed) =>
        ra.page({
          after: position,
          consumer: opts.consumer,
          limit: named ? 1 : 20,
          wait: failed && opts.idleSeconds === undefined ? 0 : wait,
          type: opts.type,
          match: opts.match,
          state: opts.state,
          signal: opts.signal,
        }),
      Number.POSITIVE_INFINITY,
      opts.signal,
      ra,
    );
    // A restore (a new epoch) gives sequences again to new events: read the address again from the
    // start, skipping the ids handled already (at-least-once holds). Named consumers' positions are
    // the service's, restored with it.
    const meta = pageEpoch(page);
    if (!named && meta && ra.epoch !== undefined && meta.epoch !== ra.epoch) {
      ra.epoch = meta.epoch;
      skipHandled = true;
      position = 0;
      ra.cursor = 0;
      await opts.onCommit?.(0);
      continue;
    }
    for (const [i, event] of page.events.entries()) {
      if (skipHandled && handled.has(event.id)) {
        position = i === page.events.length - 1 ? page.next_cursor : event.sequence;
        if (!named) ra.cursor = position;
        continue;
      }
      for (let attempt = 1; ; attempt++) {
        try {
          await handler(event);
          break;
        } catch (err) {
          opts.onError?.(err, event, attempt);
          await sleep(Math.min(60_000, retryDelay * 2 ** (attempt - 1)), opts.signal);
        }
      }
      handled.add(event.id);
      if (handled.size > HANDLED_IDS) handled.delete(handled.values().next().value as string);
      if (opts.ack ?? true) await retrying(() => ra.ack(event.id), Number.POSITIVE_INFINITY, opts.signal, ra);
      // Past the page's last event the examined non-matching ones are confirmed too.
      position = i === page.events.length - 1 ? page.next_cursor : event.sequence;
      if (!named) ra.cursor = position;
      await opts.onCommit?.(position);
    }
    if (page.events.length === 0) {
      position = page.next_cursor;
      if (!named) ra.cursor = position;
      if (opts.idleSeconds !== undefined && !page.has_more) {
        // Confirm how far the (filtered) scan got before returning.
        if (named)
          await retrying(() => ra.page({ after: position, consumer: opts.consumer, limit: 1, signal: opts.signal }), Number.POSITIVE_INFINITY, opts.signal, ra);
        else await opts.onCommit?.(position);
        return;
      }
    }
  }
}

/**
 * Walks every event after `after` (default the cursor) in sequence order, page by page, until
 * the queue's end; it does not move `cursor`. Transient failures are retried a few times.
 */
export async function* events(ra: LoopClient, opts: EventsOptions = {}): AsyncGenerator<Event, void, undefined> {
  let after = opts.after ?? ra.cursor;
  for (;;) {
    const page = await retrying(
      () => ra.page({ after, limit: opts.limit, type: opts.type, match: opts.match, state: opts.state, signal: opts.signal }),
      Date.now() + 30_000,
      opts.signal,
      ra,
    );
    for (const e of page.events) yield e;
    after = page.next_cursor;
    if (!page.has_more) return;
  }
}

/**
 * The first event after the cursor that passes the filter (evaluated by the service), long-polling
 * up to `timeout` seconds. Network errors and 429/5xx answers are retried with backoff from the
 * same cursor until the timeout, so no event is skipped or seen twice. The client's `cursor`
 * becomes the event's sequence (the next waitFor starts after it), or on timeout how far the queue
 * was scanned. (The CLI's filtered `wait` does not save that cursor: see consume() for reading
 * every event at-least-once.) An error that persists to the deadline is thrown.
 */
export async function waitFor(ra: LoopClient, opts: WaitOptions = {}): Promise<WaitResult> {
  const deadline = Date.now() + (opts.timeout ?? 300) * 1000;
  let after = opts.after ?? ra.cursor;
  for (;;) {
    const wait = Math.min(MAX_WAIT_SECONDS, Math.max(0, Math.ceil((deadline - Date.now()) / 1000)));
    // After a failed read, the next does not wait (as in consume): an empty answer loops to a long-poll.
    const page = await retrying(
      (failed) => ra.page({ after, limit: 1, wait: failed ? 0 : wait, type: opts.type, match: opts.match, state: opts.state, signal: opts.signal }),
      deadline,
      opts.signal,
      ra,
    );
    after = page.next_cursor;
    const event = page.events[0];
    if (event) {
      ra.cursor = event.sequence;
      return { event, cursor: event.sequence };
    }
    if (Date.now() >= deadline && !page.has_more) {
      ra.cursor = after;
      return { event: null, cursor: after };
    }
  }
}
