// The TypeScript client (design.md, "Agent toolkit and live view"), published as
// @return-address/client. Its types are the routes' own TypeBox schemas, expanded to plain types at
// build time (scripts/generate.mjs writes src/generated/), so the package has no dependency, carries
// no server code and cannot drift from what the routes validate and /openapi.json documents.
import type * as S from './generated/api-types.js';
import type { EventMatch } from './generated/event-match.js';
import { elementTexts, memberTexts, rememberSource, sourceOf } from './json-source.js';

export { type EventFilter, type EventMatch, eventMatches, parseMatch, valueAt } from './generated/event-match.js';
export { indentJson, sourceOf } from './json-source.js';

export type Address = S.Address;
export type CreateAddressBody = S.CreateAddressBody;
export type CreateAddressResponse = S.CreateAddressResponse;
export type CreateEventBody = S.CreateEventBody;
export type Event = S.Event;
export type EventPage = S.EventPage;
export type EventDeliveryResponse = S.EventDeliveryResponse;
export type ErrorBody = S.ErrorBody;
export type SigningSecretsBody = S.SigningSecretsBody;
export type SigningSecretsResponse = S.SigningSecretsResponse;
/** The address's sender policy (PUT …/sender-policy) and what GET answers. */
export type SenderPolicy = S.SenderPolicyBody;
export type SenderPolicyResponse = S.SenderPolicyResponse;
/** What POST …/rotate answers: the new credentials, shown once. */
export type RotateCredentialsResponse = S.RotateResponse;
export type SubscriptionRequest = S.SubscriptionBody;
export type Subscription = S.Subscription;

/** A claim's lease on one event (POST …/claims). */
export type Claim = S.Claim;

export interface ClaimOptions {
  max?: number;
  lease_seconds?: number;
  wait?: number;
  max_deliveries?: number;
  type?: string | string[];
  match?: Record<string, string | number | boolean | null> | string[];
}

/** An approval (POST …/approvals): url only in the answer to its creation. */
export type Approval = S.Approval;
/** One input of an approval's page. */
export type ApprovalFieldSpec = S.ApprovalField;

export interface AskOptions {
  details?: string;
  /** Default approve/deny. */
  options?: { id: string; label: string }[];
  fields?: ApprovalFieldSpec[];
  /** The approval's lifetime (expires_in_seconds); default the server's (a day, or the address's remaining lifetime). */
  expiresIn?: number;
  /** Seconds to wait for the answer; default the approval's lifetime. */
  timeout?: number;
  /** Called with the page's URL once the approval exists: send it to the person through your own channel. */
  onUrl?: (url: string, approval: Approval) => void | Promise<void>;
  signal?: AbortSignal;
}

export interface AskResult {
  approval: Approval;
  /** approval.decided (data.option, data.fields…), approval.expired or approval.cancelled; null when the timeout passed first. */
  event: Event | null;
}

export const DEFAULT_URL = 'http://localhost:3000';
/**
 * The server holds a long-poll at most this long (EventsQuery.wait maximum, MAX_WAIT_SECONDS of the
 * service's domain/long-poll.ts; this package imports nothing from the service, and
 * test/client/client-package.test.ts checks that the two agree).
 */
export const MAX_WAIT_SECONDS = 25;

/**
 * Every failure the client reports. `status` is the HTTP status (0 when no response came),
 * `code` the API's stable error code (`network_error`, `bad_response` when there was none).
 */
export class ReturnAddressError extends Error {
  override readonly name = 'ReturnAddressError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface ClientOptions {
  /** Base URL of the service; default `RETURN_ADDRESS_URL`, else http://localhost:3000. */
  url?: string;
  /** Stands in for the global fetch (a proxy-aware one, for instance). */
  fetch?: typeof fetch;
}

export interface CreateOptions extends ClientOptions {
  name?: string;
  taskId?: string;
  /** Lifetime in seconds (expires_in_seconds). */
  ttl?: number;
  /** A create token, for a service whose operator set CREATE_TOKENS (default $RETURN_ADDRESS_CREATE_TOKEN). */
  createToken?: string;
}

/**
 * A server-side filter (design.md, "Reading without loss"), evaluated by the service with the one matching rule of
 * event-match.ts: `type` exact or `prefix.*` (any of a list), every `match` path=value, `state`.
 */
export interface FilterOptions {
  type?: string | readonly string[];
  /** Dotted path → value, all must hold (`{ 'data.from.address': 'noreply@github.com', 'data.ok': true }`). */
  match?: EventMatch;
  state?: 'unacked' | 'acked' | 'all';
}

export interface WaitOptions extends FilterOptions {
  /** Seconds to wait in all; default 300. 0 only looks. */
  timeout?: number;
  /** Cursor to start after; default this client's `cursor`. */
  after?: number;
  signal?: AbortSignal;
}

export interface WaitResult {
  /** The first matching event after the cursor, or null when the timeout passed. */
  event: Event | null;
  /** The event's sequence, or how far the queue was scanned on timeout: pass as `after` next time. */
  cursor: number;
}

export interface PageOptions extends FilterOptions {
  after?: number;
  limit?: number;
  wait?: number;
  /** A named consumer: the service keeps its position (after=N stores N first; without after it reads from the stored one). */
  consumer?: string;
  signal?: AbortSignal;
}

export interface ConsumeOptions extends FilterOptions {
  /** A named consumer whose position the service keeps; without it, the position is this client's `cursor`. */
  consumer?: string;
  /** Start after this sequence (stored first for a consumer); default the consumer's position or `cursor`. */
  after?: number;
  /** Acknowledge each event once its handler succeeded; default true. */
  ack?: boolean;
  /** Called with the new position after each handled event (e.g. to save it); awaited before the next event. */
  onCommit?: (cursor: number) => void | Promise<void>;
  /** Called when a handler fails, before the retry (default: nothing). */
  onError?: (err: unknown, event: Event, attempt: number) => void;
  /** Return once a long-poll of `idleSeconds` finds nothing new (default: run until `signal` aborts). */
  idleSeconds?: number;
  /** First retry delay in ms (doubling to 60 s); default 1000. */
  retryDelayMs?: number;
  signal?: AbortSignal;
}

/** consumeClaims: one worker among several on one address. */
export interface ClaimConsumeOptions {
  type?: string | string[];
  match?: Record<string, string | number | boolean | null> | string[];
  /** Each lease's length; the lease is extended every half of it while the handler runs. Default 60. */
  leaseSeconds?: number;
  /** After this many deliveries without an ack an event becomes dead. Default 5. */
  maxDeliveries?: number;
  /** Called when a handler fails (its event is then nacked with a delay of 1 s doubling per delivery, at most 60 s). */
  onError?: (err: unknown, claim: Claim) => void;
  /** Return once a claim waiting `idleSeconds` finds nothing (default: run until `signal` aborts). */
  idleSeconds?: number;
  signal?: AbortSignal;
}

export interface EventsOptions extends FilterOptions {
  after?: number;
  limit?: number;
  signal?: AbortSignal;
}

/** Adds a filter's parameters (repeated type and match) to a query. */
export function appendFilter(params: URLSearchParams, f: FilterOptions): void {
  for (const t of typeof f.type === 'string' ? [f.type] : (f.type ?? [])) params.append('type', t);
  for (const [path, value] of Object.entries(f.match ?? {})) params.append('match', `${path}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
  if (f.state !== undefined) params.set('state', f.state);
}

/** An environment variable where there is a `process` (Node, Deno), else undefined (browsers). */
function envVar(name: string): string | undefined {
  return (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[name];
}

export function resolveUrl(url?: string): string {
  return (url ?? envVar('RETURN_ADDRESS_URL') ?? DEFAULT_URL).replace(/\/+$/, '');
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** Retried by reads: no answer at all, or one that says "try again" (429, 5xx). */
function transient(err: unknown): boolean {
  return err instanceof ReturnAddressError && (err.status === 0 || err.status === 429 || err.status >= 500);
}

/**
 * A 5xx that does not say "try later" (500 internal, not 502/503/504): the same request will most
 * likely fail again, so it is retried only this many times in all, not until the deadline (a page
 * that failed on the server every time was once retried forever).
 */
const INTERNAL_ERROR_ATTEMPTS = 3;
const tryLater = (err: unknown) =>
  err instanceof ReturnAddressError && (err.status === 0 || err.status === 429 || err.status === 502 || err.status === 503 || err.status === 504);

async function request<T>(
  doFetch: typeof fetch,
  method: string,
  url: string,
  opts: { token?: string; json?: unknown; headers?: Record<string, string>; signal?: AbortSignal; onHeaders?: (headers: Headers) => void } = {},
): Promise<T> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.json !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  let text: string;
  try {
    res = await doFetch(url, { method, headers, body: opts.json === undefined ? undefined : JSON.stringify(opts.json), signal: opts.signal });
    text = await res.text();
  } catch (err) {
    if (opts.signal?.aborted && (opts.signal.reason as Error)?.name !== 'TimeoutError') throw err;
    throw new ReturnAddressError(
      0,
      'network_error',
      `${method} ${url}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`,
      { cause: err },
    );
  }
  let body: unknown = null;
  if (text !== '') {
    try {
      body = JSON.parse(text);
    } catch {
      throw new ReturnAddressError(res.status, 'bad_response', `${method} ${url}: HTTP ${res.status}, not JSON: ${text.slice(0, 200)}`);
    }
    rememberSource(body, text);
  }
  if (!res.ok) {
    const e = (body as Partial<ErrorBody> | null)?.error;
    throw new ReturnAddressError(res.status, e?.code ?? 'bad_response', e?.message ?? `${method} ${url}: HTTP ${res.status}`);
  }
  opts.onHeaders?.(res.headers);
  return body as T;
}

/** What the headers of a page said: the store's epoch and the address's last sequence (absent from an older service). */
export interface PageEpoch {
  epoch: string;
  lastSequence: number;
}
const pageEpochs = new WeakMap<object, PageEpoch>();

/**
 * The store epoch and the address's last sequence that came with a page (Return-Address-Epoch and
 * Return-Address-Last-Sequence); undefined from a service that does not send them. A new epoch
 * means the service was restored from a backup: sequences may be given again to new events.
 */
export function pageEpoch(page: EventPage): PageEpoch | undefined {
  return pageEpochs.get(page);
}

/** How many handled event ids consume() remembers, to skip them when a restore makes it read again. */
const HANDLED_IDS = 10_000;

/** Each event of a page remembers its own JSON text, so the CLI prints its numbers as the service sent them. */
function rememberEventSources(page: EventPage): EventPage {
  const text = sourceOf(page);
  const events = text === undefined ? undefined : memberTexts(text).get('events');
  if (events !== undefined) {
    const texts = elementTexts(events);
    for (let i = 0; i < texts.length; i++) rememberSource(page.events[i], texts[i]!);
  }
  return page;
}

/** One address: its read token, its inbox URL when known, and a cursor that waitFor advances. */
export class ReturnAddress {
  readonly url: string;
  readonly id: string;
  /** The read token; rotate() replaces it when it rotates the token. */
  token: string;
  /** The secret delivery URL; known when this client created the address or was given the create response (rotate() replaces it). */
  inboxUrl: string | undefined;
  /** The create response, when this client has it. */
  readonly created: CreateAddressResponse | undefined;
  /** Sequence of the last event this client consumed; waitFor and events() start after it by default. */
  cursor: number;
  /** The store epoch this client first saw (pageEpoch); consume() re-reads from the start when it changes. */
  epoch: string | undefined;
  /** The last event ids consume() handled (at most HANDLED_IDS), skipped when a new epoch makes it read again. */
  private readonly handledIds = new Set<string>();
  private readonly fetch: typeof fetch;

  constructor(opts: ClientOptions & { id: string; token: string; inboxUrl?: string; cursor?: number; created?: CreateAddressResponse }) {
    this.url = resolveUrl(opts.url);
    this.id = opts.id;
    this.token = opts.token;
    this.inboxUrl = opts.inboxUrl;
    this.created = opts.created;
    this.cursor = opts.cursor ?? 0;
    this.fetch = opts.fetch ?? globalThis.fetch;
  }

  /** Creates an address (POST /api/v1/addresses). Not retried: a retry could create a second one. */
  static async create(opts: CreateOptions = {}): Promise<ReturnAddress> {
    const body: CreateAddressBody = {};
    if (opts.name !== undefined) body.name = opts.name;
    if (opts.taskId !== undefined) body.task_id = opts.taskId;
    if (opts.ttl !== undefined) body.expires_in_seconds = opts.ttl;
    const createToken = opts.createToken ?? envVar('RETURN_ADDRESS_CREATE_TOKEN');
    const created = await request<CreateAddressResponse>(opts.fetch ?? globalThis.fetch, 'POST', `${resolveUrl(opts.url)}/api/v1/addresses`, {
      json: body,
      token: createToken,
    });
    return ReturnAddress.fromCreated(created, opts);
  }

  /** A client for an address created earlier, from its saved create response (and cursor). */
  static fromCreated(created: CreateAddressResponse & { cursor?: number }, opts: ClientOptions = {}): ReturnAddress {
    return new ReturnAddress({
      ...opts,
      id: created.address.id,
      token: created.credentials.read_token,
      inboxUrl: created.endpoints.inbox_url,
      cursor: created.cursor ?? 0,
      created,
    });
  }

  /** Delivers an event to an inbox URL, as a third party would (no read token needed). */
  static deliverTo(inboxUrl: string, event: CreateEventBody = {}, opts: ClientOptions & { idempotencyKey?: string } = {}): Promise<EventDeliveryResponse> {
    return request(opts.fetch ?? globalThis.fetch, 'POST', inboxUrl, {
      json: event,
      headers: opts.idempotencyKey ? { 'idempotency-key': opts.idempotencyKey } : {},
    });
  }

  private get base(): string {
    return `${this.url}/api/v1/addresses/${encodeURIComponent(this.id)}`;
  }

  async get(opts: { signal?: AbortSignal } = {}): Promise<Address> {
    return (await request<{ address: Address }>(this.fetch, 'GET', this.base, { token: this.token, signal: opts.signal })).address;
  }

  /** Delivers to this address's own inbox (tests, self-notes, hand-offs between agents). */
  deliver(event: CreateEventBody = {}, opts: { idempotencyKey?: string } = {}): Promise<EventDeliveryResponse> {
    if (!this.inboxUrl) throw new ReturnAddressError(0, 'no_inbox_url', 'this client has no inbox URL: build it from the create response');
    return ReturnAddress.deliverTo(this.inboxUrl, event, { ...opts, fetch: this.fetch });
  }

  /** One page of events after `after` (GET …/events), holding up to `wait` seconds when there is none (matching). */
  page(q: PageOptions = {}): Promise<EventPage> {
    const params = new URLSearchParams();
    // A consumer without after reads from its stored position.
    if (q.after !== undefined || q.consumer === undefined) params.set('after', String(q.after ?? this.cursor));
    if (q.limit !== undefined) params.set('limit', String(q.limit));
    if (q.wait !== undefined) params.set('wait', String(q.wait));
    appendFilter(params, q);
    if (q.consumer !== undefined) params.set('consumer', q.consumer);
    // A connection that silently dies mid long-poll must not hang the caller: give up a while after
    // the server would have answered, and let the retry loop reconnect.
    const signal = AbortSignal.any([AbortSignal.timeout(((q.wait ?? 0) + 15) * 1000), ...(q.signal ? [q.signal] : [])]);
    let seen: PageEpoch | undefined;
    const onHeaders = (h: Headers) => {
      const epoch = h.get('return-address-epoch');
      const last = Number(h.get('return-address-last-sequence'));
      if (epoch && Number.isSafeInteger(last)) seen = { epoch, lastSequence: last };
    };
    return request<EventPage>(this.fetch, 'GET', `${this.base}/events?${params}`, { token: this.token, signal, onHeaders }).then((page) => {
      if (seen) {
        pageEpochs.set(page, seen);
        this.epoch ??= seen.epoch;
      }
      return rememberEventSources(page);
    });
  }

  /**
   * At-least-once: hands each event (matching the filter), in sequence order, to `handler`; once it
   * resolves, acknowledges the event (unless `ack: false`) and commits the position (this client's
   * `cursor` and `onCommit`, or the named consumer's on the service, which the next read confirms).
   * A handler that throws is retried with backoff (1 s doubling to 60 s) on the same event: nothing
   * is skipped and the order holds. A crash re-delivers what was not committed: dedupe by event id.
   */
  async consume(handler: (event: Event) => unknown, opts: ConsumeOptions = {}): Promise<void> {
    const named = opts.consumer !== undefined;
    let position: number | undefined = opts.after ?? (named ? undefined : this.cursor);
    const retryDelay = opts.retryDelayMs ?? 1000;
    const handled = this.handledIds;
    // Only a re-read after a new epoch skips handled ids: an event handled but not committed (a
    // stopped run) comes again, as at-least-once says.
    let skipHandled = false;
    for (;;) {
      if (opts.signal?.aborted) return;
      const wait = opts.idleSeconds ?? MAX_WAIT_SECONDS;
      // A consumer reads one event a page: asking for the next one is what commits the last.
      const page = await this.retrying(
        () =>
          this.page({
            after: position,
            consumer: opts.consumer,
            limit: named ? 1 : 20,
            wait,
            type: opts.type,
            match: opts.match,
            state: opts.state,
            signal: opts.signal,
          }),
        Number.POSITIVE_INFINITY,
        opts.signal,
      );
      // A restore (a new epoch) gives sequences again to new events: read the address again from the
      // start, skipping the ids handled already (at-least-once holds). Named consumers' positions are
      // the service's, restored with it.
      const meta = pageEpoch(page);
      if (!named && meta && this.epoch !== undefined && meta.epoch !== this.epoch) {
        this.epoch = meta.epoch;
        skipHandled = true;
        position = 0;
        this.cursor = 0;
        await opts.onCommit?.(0);
        continue;
      }
      for (const [i, event] of page.events.entries()) {
        if (skipHandled && handled.has(event.id)) {
          position = i === page.events.length - 1 ? page.next_cursor : event.sequence;
          if (!named) this.cursor = position;
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
        if (opts.ack ?? true) await this.retrying(() => this.ack(event.id), Number.POSITIVE_INFINITY, opts.signal);
        // Past the page's last event the examined non-matching ones are confirmed too.
        position = i === page.events.length - 1 ? page.next_cursor : event.sequence;
        if (!named) this.cursor = position;
        await opts.onCommit?.(position);
      }
      if (page.events.length === 0) {
        position = page.next_cursor;
        if (!named) this.cursor = position;
        if (opts.idleSeconds !== undefined && !page.has_more) {
          // Confirm how far the (filtered) scan got before returning.
          if (named)
            await this.retrying(
              () => this.page({ after: position, consumer: opts.consumer, limit: 1, signal: opts.signal }),
              Number.POSITIVE_INFINITY,
              opts.signal,
            );
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
  async *events(opts: EventsOptions = {}): AsyncGenerator<Event, void, undefined> {
    let after = opts.after ?? this.cursor;
    for (;;) {
      const page = await this.retrying(
        () => this.page({ after, limit: opts.limit, type: opts.type, match: opts.match, state: opts.state, signal: opts.signal }),
        Date.now() + 30_000,
        opts.signal,
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
  async waitFor(opts: WaitOptions = {}): Promise<WaitResult> {
    const deadline = Date.now() + (opts.timeout ?? 300) * 1000;
    let after = opts.after ?? this.cursor;
    for (;;) {
      const wait = Math.min(MAX_WAIT_SECONDS, Math.max(0, Math.ceil((deadline - Date.now()) / 1000)));
      const page = await this.retrying(
        () => this.page({ after, limit: 1, wait, type: opts.type, match: opts.match, state: opts.state, signal: opts.signal }),
        deadline,
        opts.signal,
      );
      after = page.next_cursor;
      const event = page.events[0];
      if (event) {
        this.cursor = event.sequence;
        return { event, cursor: event.sequence };
      }
      if (Date.now() >= deadline && !page.has_more) {
        this.cursor = after;
        return { event: null, cursor: after };
      }
    }
  }

  /** Acknowledges an event; idempotent. */
  async ack(eventId: string): Promise<Event> {
    const body = await request<{ event: Event }>(this.fetch, 'POST', `${this.base}/events/${encodeURIComponent(eventId)}/ack`, { token: this.token });
    const text = sourceOf(body);
    if (text !== undefined) rememberSource(body.event, memberTexts(text).get('event')!);
    return body.event;
  }

  /**
   * Sets the secrets that verify signed requests to the capture URL (PUT …/signing-secrets). It
   * replaces the whole set: a scheme left out is removed, {} removes all. Secrets are never returned.
   */
  setSigningSecrets(secrets: SigningSecretsBody): Promise<SigningSecretsResponse> {
    return request<SigningSecretsResponse>(this.fetch, 'PUT', `${this.base}/signing-secrets`, { token: this.token, json: secrets });
  }

  /**
   * Replaces a leaked inbox secret, read token or both (POST …/rotate): the old one is refused from
   * the answer on; the address and its queue stay. This client switches to the new read token and
   * inbox URL; persist the answer, the new credentials are shown only this once. Not retried: a
   * retry after a lost answer would rotate again (and a lost new token cannot be recovered).
   */
  async rotate(what: { inboxSecret?: boolean; readToken?: boolean }): Promise<RotateCredentialsResponse> {
    const json = { inbox_secret: what.inboxSecret === true, read_token: what.readToken === true };
    const body = await request<RotateCredentialsResponse>(this.fetch, 'POST', `${this.base}/rotate`, { token: this.token, json });
    if (body.credentials.read_token !== undefined) this.token = body.credentials.read_token;
    if (body.endpoints.inbox_url !== undefined) this.inboxUrl = body.endpoints.inbox_url;
    return body;
  }

  /** The address's sender policy (GET …/sender-policy): `sender_policy` null when none is set. */
  senderPolicy(): Promise<SenderPolicyResponse> {
    return request<SenderPolicyResponse>(this.fetch, 'GET', `${this.base}/sender-policy`, { token: this.token });
  }

  /** Sets (replaces) the sender policy (PUT …/sender-policy): deliveries that fail it are stored quarantined. */
  setSenderPolicy(policy: SenderPolicy): Promise<SenderPolicyResponse> {
    return request<SenderPolicyResponse>(this.fetch, 'PUT', `${this.base}/sender-policy`, { token: this.token, json: policy });
  }

  /** Removes the sender policy (DELETE …/sender-policy; idempotent). */
  async deleteSenderPolicy(): Promise<void> {
    await request<null>(this.fetch, 'DELETE', `${this.base}/sender-policy`, { token: this.token });
  }

  /**
   * Pushes events to a URL (POST …/subscriptions): each matching event POSTed alone, in order, signed
   * with Standard Webhooks. Without `secret`, the generated one is in this result only: keep it.
   */
  subscribe(body: SubscriptionRequest): Promise<Subscription> {
    return request<Subscription>(this.fetch, 'POST', `${this.base}/subscriptions`, { token: this.token, json: body });
  }

  /** The address's webhook subscriptions with their positions and delivery state (GET …/subscriptions). */
  async subscriptions(): Promise<Subscription[]> {
    return (await request<{ subscriptions: Subscription[] }>(this.fetch, 'GET', `${this.base}/subscriptions`, { token: this.token })).subscriptions;
  }

  /** One subscription (GET …/subscriptions/{id}). */
  subscription(id: string): Promise<Subscription> {
    return request<Subscription>(this.fetch, 'GET', `${this.base}/subscriptions/${encodeURIComponent(id)}`, { token: this.token });
  }

  /** Resumes a paused subscription (POST …/subscriptions/{id}/resume): the failed event is sent again, then the rest. */
  resumeSubscription(id: string): Promise<Subscription> {
    return request<Subscription>(this.fetch, 'POST', `${this.base}/subscriptions/${encodeURIComponent(id)}/resume`, { token: this.token });
  }

  /** Deletes a subscription (DELETE …/subscriptions/{id}); its consumer push:<id> stays for a reader to go on by pull. */
  async unsubscribe(id: string): Promise<void> {
    await request<null>(this.fetch, 'DELETE', `${this.base}/subscriptions/${encodeURIComponent(id)}`, { token: this.token });
  }

  /** Releases a quarantined event (POST …/events/{id}/release): readable by default reads again. */
  async release(eventId: string): Promise<Event> {
    const body = await request<{ event: Event }>(this.fetch, 'POST', `${this.base}/events/${encodeURIComponent(eventId)}/release`, { token: this.token });
    return body.event;
  }

  /** The exact bytes behind an event's `data.raw.url` (a large captured body kept outside the event). */
  async rawBytes(url: string, opts: { signal?: AbortSignal } = {}): Promise<Uint8Array> {
    let res: Response;
    try {
      res = await this.fetch(url, { headers: { authorization: `Bearer ${this.token}` }, signal: opts.signal });
    } catch (err) {
      throw new ReturnAddressError(0, 'network_error', `GET ${url}: ${(err as Error).message}`, { cause: err });
    }
    if (!res.ok) throw new ReturnAddressError(res.status, 'bad_response', `GET ${url}: HTTP ${res.status}`);
    return new Uint8Array(await res.arrayBuffer());
  }

  /**
   * Claims (several workers on one address): leases up to `max` of the oldest claimable events for
   * `lease_seconds`; with `wait`, holds until one is claimable. Settle each with its lease_id.
   */
  async claim(opts: ClaimOptions = {}, signal?: AbortSignal): Promise<Claim[]> {
    return (await request<{ claims: Claim[] }>(this.fetch, 'POST', `${this.base}/claims`, { token: this.token, json: opts, signal })).claims;
  }

  /**
   * A worker among several sharing this address (claims, at-least-once): claims one event at a
   * time, runs `handler`, acks through the lease when it resolves and nacks (with a growing delay)
   * when it throws. The lease is extended while the handler runs. An ack answered lease_lost (the
   * lease ran out and another worker took the event) is reported to `onError` and skipped.
   */
  async consumeClaims(handler: (event: Event, claim: Claim) => unknown, opts: ClaimConsumeOptions = {}): Promise<void> {
    const leaseSeconds = opts.leaseSeconds ?? 60;
    const ask: ClaimOptions = { max: 1, lease_seconds: leaseSeconds, wait: opts.idleSeconds ?? MAX_WAIT_SECONDS, max_deliveries: opts.maxDeliveries ?? 5 };
    if (opts.type !== undefined) ask.type = opts.type;
    if (opts.match !== undefined) ask.match = opts.match;
    for (;;) {
      if (opts.signal?.aborted) return;
      const claims = await this.retrying(() => this.claim(ask, opts.signal), Number.POSITIVE_INFINITY, opts.signal);
      if (claims.length === 0 && opts.idleSeconds !== undefined) return;
      for (const c of claims) {
        const keepAlive = setInterval(
          () => {
            this.extendClaim(c.lease_id, leaseSeconds).catch(() => {});
          },
          (leaseSeconds * 1000) / 2,
        );
        let failure: { err: unknown } | undefined;
        try {
          await handler(c.event, c);
        } catch (err) {
          failure = { err };
        } finally {
          clearInterval(keepAlive);
        }
        try {
          if (failure === undefined) await this.retrying(() => this.ackClaim(c.lease_id), Number.POSITIVE_INFINITY, opts.signal);
          else {
            opts.onError?.(failure.err, c);
            const delay = Math.min(60, 2 ** (c.delivery_count - 1));
            await this.retrying(
              () => this.nackClaim(c.lease_id, { delay_seconds: delay, reason: String((failure.err as Error)?.message ?? failure.err).slice(0, 500) }),
              Number.POSITIVE_INFINITY,
              opts.signal,
            );
          }
        } catch (err) {
          if (!(err instanceof ReturnAddressError && err.code === 'lease_lost')) throw err;
          opts.onError?.(err, c);
        }
      }
    }
  }

  /** Acks a claimed event through its lease; a ReturnAddressError with code lease_lost once the event was claimed again. */
  async ackClaim(leaseId: string): Promise<Event> {
    return (await request<{ event: Event }>(this.fetch, 'POST', `${this.base}/claims/${encodeURIComponent(leaseId)}/ack`, { token: this.token })).event;
  }

  /** Extends a lease: it now ends `leaseSeconds` from now. Returns the new end (ISO 8601). */
  async extendClaim(leaseId: string, leaseSeconds?: number): Promise<string> {
    const json = leaseSeconds === undefined ? {} : { lease_seconds: leaseSeconds };
    return (
      await request<{ lease_expires_at: string }>(this.fetch, 'POST', `${this.base}/claims/${encodeURIComponent(leaseId)}/extend`, { token: this.token, json })
    ).lease_expires_at;
  }

  /** Gives a claimed event back: claimable again after `delay_seconds`, or dead (after max_deliveries, or with `dead: true`). */
  async nackClaim(leaseId: string, opts: { delay_seconds?: number; reason?: string; dead?: boolean } = {}): Promise<Event> {
    return (await request<{ event: Event }>(this.fetch, 'POST', `${this.base}/claims/${encodeURIComponent(leaseId)}/nack`, { token: this.token, json: opts }))
      .event;
  }

  /** Deletes the address and all its events. */
  async delete(): Promise<void> {
    await request<null>(this.fetch, 'DELETE', this.base, { token: this.token });
  }

  /** Creates an approval (POST …/approvals); its `url` is shown only here. Not retried: a retry could create a second one. */
  createApproval(body: {
    question: string;
    details?: string;
    options?: { id: string; label: string }[];
    fields?: ApprovalFieldSpec[];
    expires_in_seconds?: number;
    max_responses?: number;
  }): Promise<Approval> {
    return request<{ approval: Approval }>(this.fetch, 'POST', `${this.base}/approvals`, { token: this.token, json: body }).then((r) => r.approval);
  }

  /** An approval's status and answers. */
  getApproval(approvalId: string): Promise<Approval> {
    return request<{ approval: Approval }>(this.fetch, 'GET', `${this.base}/approvals/${encodeURIComponent(approvalId)}`, { token: this.token }).then(
      (r) => r.approval,
    );
  }

  /** Cancels a pending approval (approval.cancelled). */
  cancelApproval(approvalId: string): Promise<Approval> {
    return request<{ approval: Approval }>(this.fetch, 'DELETE', `${this.base}/approvals/${encodeURIComponent(approvalId)}`, { token: this.token }).then(
      (r) => r.approval,
    );
  }

  /**
   * Asks a person: creates an approval, hands its URL to `onUrl` (send it through your own channel),
   * then waits for the approval's first event (approval.decided, .expired or .cancelled, matched on
   * data.approval_id) and returns it. The event stays unacknowledged: ack it once acted upon.
   */
  async ask(question: string, opts: AskOptions = {}): Promise<AskResult> {
    const approval = await this.createApproval({
      question,
      ...(opts.details !== undefined ? { details: opts.details } : {}),
      ...(opts.options !== undefined ? { options: opts.options } : {}),
      ...(opts.fields !== undefined ? { fields: opts.fields } : {}),
      ...(opts.expiresIn !== undefined ? { expires_in_seconds: opts.expiresIn } : {}),
    });
    await opts.onUrl?.(approval.url ?? '', approval);
    const lifetime = Math.ceil((Date.parse(approval.expires_at) - Date.now()) / 1000);
    // The expiry event comes within the server's sweep interval after expires_at: wait a minute past it.
    const timeout = opts.timeout ?? lifetime + 60;
    // trust.verified: only the service's own approval events (an answer, an expiry, a cancel) count,
    // never an inbox delivery that copies their data.
    const { event } = await this.waitFor({ match: { 'trust.verified': true, 'data.approval_id': approval.id }, timeout, signal: opts.signal });
    return { approval, event };
  }

  /**
   * Runs a read, retrying transient failures with capped exponential backoff (and jitter) until
   * `deadline`; a 500 only INTERNAL_ERROR_ATTEMPTS times in all.
   */
  private async retrying<T>(read: () => Promise<T>, deadline: number, signal?: AbortSignal): Promise<T> {
    let internalErrors = 0;
    let token = this.token;
    for (let attempt = 0; ; attempt++) {
      try {
        return await read();
      } catch (err) {
        // This client rotated its own read token (rotate()) while the read waited: the service ended
        // that wait for the old token (credentials_rotated), so it is read again with the new one.
        if (err instanceof ReturnAddressError && err.code === 'credentials_rotated' && this.token !== token) {
          token = this.token;
          continue;
        }
        const delay = Math.min(5000, 200 * 2 ** attempt) * (0.5 + Math.random() / 2);
        if (transient(err) && !tryLater(err) && ++internalErrors >= INTERNAL_ERROR_ATTEMPTS) throw err;
        if (!transient(err) || Date.now() + delay > deadline) throw err;
        await sleep(delay, signal);
      }
    }
  }
}
