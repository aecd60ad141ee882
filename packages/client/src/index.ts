// The TypeScript client (design.md, "Agent toolkit and live view"), published as
// @return-address/client. Its types are the routes' own TypeBox schemas, expanded to plain types at
// build time (scripts/generate.mjs writes src/generated/), so the package has no dependency, carries
// no server code and cannot drift from what the routes validate and /openapi.json documents.
import type * as S from './generated/api-types.js';
import { eventMatches, type EventMatch } from './generated/event-match.js';

export { eventMatches, parseMatch, valueAt, type EventFilter, type EventMatch } from './generated/event-match.js';

export type Address = S.Address;
export type CreateAddressBody = S.CreateAddressBody;
export type CreateAddressResponse = S.CreateAddressResponse;
export type CreateEventBody = S.CreateEventBody;
export type Event = S.Event;
export type EventPage = S.EventPage;
export type EventDeliveryResponse = S.EventDeliveryResponse;
export type ErrorBody = S.ErrorBody;

/** An approval (POST …/approvals): url only in the answer to its creation. */
export interface Approval {
  id: string;
  status: 'pending' | 'decided' | 'expired' | 'cancelled';
  url?: string;
  question: string;
  details?: string;
  options: { id: string; label: string }[];
  fields: ApprovalFieldSpec[];
  max_responses: number;
  responses: number;
  created_at: string;
  expires_at: string;
  closed_at?: string;
  answers?: Record<string, unknown>[];
}

export interface ApprovalFieldSpec {
  name: string;
  label: string;
  type: 'text' | 'textarea' | 'number' | 'boolean' | 'select';
  required?: boolean;
  choices?: string[];
}

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
/** The server holds a long-poll at most this long (EventsQuery.wait maximum). */
const MAX_POLL_SECONDS = 25;

/**
 * Every failure the client reports. `status` is the HTTP status (0 when no response came),
 * `code` the API's stable error code (`network_error`, `bad_response` when there was none).
 */
export class ReturnAddressError extends Error {
  override readonly name = 'ReturnAddressError';
  constructor(readonly status: number, readonly code: string, message: string, options?: { cause?: unknown }) {
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

export interface WaitOptions {
  /** Only an event of exactly this type counts. */
  type?: string;
  /** Dotted path → value, all must hold (`{ 'data.from.address': 'noreply@github.com' }`). */
  match?: EventMatch;
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

export interface EventsOptions {
  after?: number;
  limit?: number;
  signal?: AbortSignal;
}

/** An environment variable where there is a `process` (Node, Deno), else undefined (browsers). */
function envVar(name: string): string | undefined {
  return (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[name];
}

export function resolveUrl(url?: string): string {
  return (url ?? envVar('RETURN_ADDRESS_URL') ?? DEFAULT_URL).replace(/\/+$/, '');
}

const sleep = (ms: number, signal?: AbortSignal) => new Promise<void>((resolve, reject) => {
  if (signal?.aborted) return reject(signal.reason as Error);
  const t = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve(); }, ms);
  const onAbort = () => { clearTimeout(t); reject(signal?.reason as Error); };
  signal?.addEventListener('abort', onAbort, { once: true });
});

/** Retried by reads: no answer at all, or one that says "try again" (429, 5xx). */
function transient(err: unknown): boolean {
  return err instanceof ReturnAddressError && (err.status === 0 || err.status === 429 || err.status >= 500);
}

/**
 * A 5xx that does not say "try later" (500 internal, not 502/503/504): the same request will most
 * likely fail again, so it is retried only this many times in all, not until the deadline (a page
 * that failed on the server every time was retried forever, issue 27).
 */
const INTERNAL_ERROR_ATTEMPTS = 3;
const tryLater = (err: unknown) => err instanceof ReturnAddressError && (err.status === 0 || err.status === 429 || err.status === 502 || err.status === 503 || err.status === 504);

async function request<T>(doFetch: typeof fetch, method: string, url: string, opts: { token?: string; json?: unknown; headers?: Record<string, string>; signal?: AbortSignal } = {}): Promise<T> {
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
    throw new ReturnAddressError(0, 'network_error', `${method} ${url}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`, { cause: err });
  }
  let body: unknown = null;
  if (text !== '') {
    try {
      body = JSON.parse(text);
    } catch {
      throw new ReturnAddressError(res.status, 'bad_response', `${method} ${url}: HTTP ${res.status}, not JSON: ${text.slice(0, 200)}`);
    }
  }
  if (!res.ok) {
    const e = (body as Partial<ErrorBody> | null)?.error;
    throw new ReturnAddressError(res.status, e?.code ?? 'bad_response', e?.message ?? `${method} ${url}: HTTP ${res.status}`);
  }
  return body as T;
}

/** One address: its read token, its inbox URL when known, and a cursor that waitFor advances. */
export class ReturnAddress {
  readonly url: string;
  readonly id: string;
  readonly token: string;
  /** The secret delivery URL; known when this client created the address or was given the create response. */
  readonly inboxUrl: string | undefined;
  /** The create response, when this client has it. */
  readonly created: CreateAddressResponse | undefined;
  /** Sequence of the last event this client consumed; waitFor and events() start after it by default. */
  cursor: number;
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
    const created = await request<CreateAddressResponse>(opts.fetch ?? globalThis.fetch, 'POST', `${resolveUrl(opts.url)}/api/v1/addresses`, { json: body, token: createToken });
    return ReturnAddress.fromCreated(created, opts);
  }

  /** A client for an address created earlier, from its saved create response (and cursor). */
  static fromCreated(created: CreateAddressResponse & { cursor?: number }, opts: ClientOptions = {}): ReturnAddress {
    return new ReturnAddress({
      ...opts, id: created.address.id, token: created.credentials.read_token, inboxUrl: created.endpoints.inbox_url, cursor: created.cursor ?? 0, created,
    });
  }

  /** Delivers an event to an inbox URL, as a third party would (no read token needed). */
  static deliverTo(inboxUrl: string, event: CreateEventBody = {}, opts: ClientOptions & { idempotencyKey?: string } = {}): Promise<EventDeliveryResponse> {
    return request(opts.fetch ?? globalThis.fetch, 'POST', inboxUrl, { json: event, headers: opts.idempotencyKey ? { 'idempotency-key': opts.idempotencyKey } : {} });
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

  /** One page of events after `after` (GET …/events), holding up to `wait` seconds when there is none. */
  page(q: { after?: number; limit?: number; wait?: number; signal?: AbortSignal } = {}): Promise<EventPage> {
    const params = new URLSearchParams({ after: String(q.after ?? this.cursor) });
    if (q.limit !== undefined) params.set('limit', String(q.limit));
    if (q.wait !== undefined) params.set('wait', String(q.wait));
    // A connection that silently dies mid long-poll must not hang the caller: give up a while after
    // the server would have answered, and let the retry loop reconnect.
    const signal = AbortSignal.any([AbortSignal.timeout(((q.wait ?? 0) + 15) * 1000), ...(q.signal ? [q.signal] : [])]);
    return request<EventPage>(this.fetch, 'GET', `${this.base}/events?${params}`, { token: this.token, signal });
  }

  /**
   * Walks every event after `after` (default the cursor) in sequence order, page by page, until
   * the queue's end; it does not move `cursor`. Transient failures are retried a few times.
   */
  async *events(opts: EventsOptions = {}): AsyncGenerator<Event, void, undefined> {
    let after = opts.after ?? this.cursor;
    for (;;) {
      const page = await this.retrying(() => this.page({ after, limit: opts.limit, signal: opts.signal }), Date.now() + 30_000, opts.signal);
      for (const e of page.events) yield e;
      after = page.next_cursor;
      if (!page.has_more) return;
    }
  }

  /**
   * The first event after the cursor that has `type` and every `match`, long-polling up to
   * `timeout` seconds. Network errors and 429/5xx answers are retried with backoff from the same
   * cursor until the timeout, so no event is skipped or seen twice. On success the client's
   * `cursor` becomes the event's sequence (the next waitFor starts after it); on timeout it becomes
   * how far the queue was scanned. An error that persists to the deadline is thrown.
   */
  async waitFor(opts: WaitOptions = {}): Promise<WaitResult> {
    const deadline = Date.now() + (opts.timeout ?? 300) * 1000;
    let after = opts.after ?? this.cursor;
    for (;;) {
      const wait = Math.min(MAX_POLL_SECONDS, Math.max(0, Math.ceil((deadline - Date.now()) / 1000)));
      const page = await this.retrying(() => this.page({ after, limit: 100, wait, signal: opts.signal }), deadline, opts.signal);
      for (const e of page.events) {
        if (eventMatches(e, opts)) {
          this.cursor = e.sequence;
          return { event: e, cursor: e.sequence };
        }
      }
      after = page.next_cursor;
      if (Date.now() >= deadline && !page.has_more) {
        this.cursor = after;
        return { event: null, cursor: after };
      }
    }
  }

  /** Acknowledges an event; idempotent. */
  async ack(eventId: string): Promise<Event> {
    return (await request<{ event: Event }>(this.fetch, 'POST', `${this.base}/events/${encodeURIComponent(eventId)}/ack`, { token: this.token })).event;
  }

  /** Deletes the address and all its events. */
  async delete(): Promise<void> {
    await request<null>(this.fetch, 'DELETE', this.base, { token: this.token });
  }

  /** Creates an approval (POST …/approvals); its `url` is shown only here. Not retried: a retry could create a second one. */
  createApproval(body: { question: string; details?: string; options?: { id: string; label: string }[]; fields?: ApprovalFieldSpec[];
    expires_in_seconds?: number; max_responses?: number }): Promise<Approval> {
    return request<{ approval: Approval }>(this.fetch, 'POST', `${this.base}/approvals`, { token: this.token, json: body }).then((r) => r.approval);
  }

  /** An approval's status and answers. */
  getApproval(approvalId: string): Promise<Approval> {
    return request<{ approval: Approval }>(this.fetch, 'GET', `${this.base}/approvals/${encodeURIComponent(approvalId)}`, { token: this.token }).then((r) => r.approval);
  }

  /** Cancels a pending approval (approval.cancelled). */
  cancelApproval(approvalId: string): Promise<Approval> {
    return request<{ approval: Approval }>(this.fetch, 'DELETE', `${this.base}/approvals/${encodeURIComponent(approvalId)}`, { token: this.token }).then((r) => r.approval);
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
    const { event } = await this.waitFor({ match: { 'data.approval_id': approval.id }, timeout, signal: opts.signal });
    return { approval, event };
  }

  /**
   * Runs a read, retrying transient failures with capped exponential backoff (and jitter) until
   * `deadline`; a 500 only INTERNAL_ERROR_ATTEMPTS times in all.
   */
  private async retrying<T>(read: () => Promise<T>, deadline: number, signal?: AbortSignal): Promise<T> {
    let internalErrors = 0;
    for (let attempt = 0; ; attempt++) {
      try {
        return await read();
      } catch (err) {
        const delay = Math.min(5000, 200 * 2 ** attempt) * (0.5 + Math.random() / 2);
        if (transient(err) && !tryLater(err) && ++internalErrors >= INTERNAL_ERROR_ATTEMPTS) throw err;
        if (!transient(err) || Date.now() + delay > deadline) throw err;
        await sleep(delay, signal);
      }
    }
  }
}
