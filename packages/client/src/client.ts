// The client of one address: ReturnAddress, its calls one request each; the loops (consume,
// waitFor, consumeClaims, ask) are functions of reading.ts, claims.ts and approvals.ts it calls.
import { ask } from './approvals.js';
import { consumeClaims } from './claims.js';
import { ReturnAddressError } from './errors.js';
import { appendFilter, envVar, request, resolveUrl } from './http.js';
import { memberTexts, rememberSource, sourceOf } from './json-source.js';
import { type PageEpoch, rememberEventSources, setPageEpoch } from './pages.js';
import { consume, events, waitFor } from './reading.js';
import type {
  Address,
  Approval,
  ApprovalRequest,
  AskOptions,
  AskResult,
  Claim,
  ClaimConsumeOptions,
  ClaimOptions,
  ClientOptions,
  ConsumeOptions,
  CreateAddressBody,
  CreateAddressResponse,
  CreateEventBody,
  CreateOptions,
  Event,
  EventDeliveryResponse,
  EventPage,
  EventsOptions,
  PageOptions,
  RotateCredentialsResponse,
  SenderPolicy,
  SenderPolicyResponse,
  SigningSecretsBody,
  SigningSecretsResponse,
  Subscription,
  SubscriptionRequest,
  WaitOptions,
  WaitResult,
} from './types.js';

/** One address: its read token, its inbox URL when known, and a cursor that waitFor advances. */
export class ReturnAddress {
  readonly url: string;
  readonly id: string;
  /** The rotate() under way, if any: it settles once the new token is in place. */
  rotation: Promise<unknown> | undefined;
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
        setPageEpoch(page, seen);
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
  consume(handler: (event: Event) => unknown, opts: ConsumeOptions = {}): Promise<void> {
    return consume(this, this.handledIds, handler, opts);
  }

  /**
   * Walks every event after `after` (default the cursor) in sequence order, page by page, until
   * the queue's end; it does not move `cursor`. Transient failures are retried a few times.
   */
  events(opts: EventsOptions = {}): AsyncGenerator<Event, void, undefined> {
    return events(this, opts);
  }

  /**
   * The first event after the cursor that passes the filter (evaluated by the service), long-polling
   * up to `timeout` seconds. Network errors and 429/5xx answers are retried with backoff from the
   * same cursor until the timeout, so no event is skipped or seen twice. The client's `cursor`
   * becomes the event's sequence (the next waitFor starts after it), or on timeout how far the queue
   * was scanned. (The CLI's filtered `wait` does not save that cursor: see consume() for reading
   * every event at-least-once.) An error that persists to the deadline is thrown.
   */
  waitFor(opts: WaitOptions = {}): Promise<WaitResult> {
    return waitFor(this, opts);
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
    const done = request<RotateCredentialsResponse>(this.fetch, 'POST', `${this.base}/rotate`, { token: this.token, json }).then((body) => {
      if (body.credentials.read_token !== undefined) this.token = body.credentials.read_token;
      if (body.endpoints.inbox_url !== undefined) this.inboxUrl = body.endpoints.inbox_url;
      return body;
    });
    // A wait this rotation ends may hear so before this answer arrives: it waits for the new token here.
    const settled = done.then(
      () => undefined,
      () => undefined,
    );
    this.rotation = settled;
    try {
      return await done;
    } finally {
      if (this.rotation === settled) this.rotation = undefined;
    }
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
  consumeClaims(handler: (event: Event, claim: Claim) => unknown, opts: ClaimConsumeOptions = {}): Promise<void> {
    return consumeClaims(this, handler, opts);
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
  createApproval(body: ApprovalRequest): Promise<Approval> {
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
  ask(question: string, opts: AskOptions = {}): Promise<AskResult> {
    return ask(this, question, opts);
  }
}
