// The client's public types: the route schemas' (generated into generated/api-types.ts) under the
// names the package has always exported, and the options of its calls.
import type * as S from './generated/api-types.js';
import type { EventMatch } from './generated/event-match.js';

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

/**
 * What the loops (reading.ts, claims.ts, approvals.ts) use of a client. `ReturnAddress` has all of
 * it; the loops name this instead of the class, so none of them imports client.ts, which imports them.
 */
export interface LoopClient {
  token: string;
  /** The rotate() under way, if any (settles once the new token is in place). */
  readonly rotation?: Promise<unknown> | undefined;
  cursor: number;
  epoch: string | undefined;
  page(q?: PageOptions): Promise<EventPage>;
  waitFor(opts?: WaitOptions): Promise<WaitResult>;
  ack(eventId: string): Promise<Event>;
  claim(opts?: ClaimOptions, signal?: AbortSignal): Promise<Claim[]>;
  ackClaim(leaseId: string): Promise<Event>;
  extendClaim(leaseId: string, leaseSeconds?: number): Promise<string>;
  nackClaim(leaseId: string, opts?: { delay_seconds?: number; reason?: string; dead?: boolean }): Promise<Event>;
  createApproval(body: ApprovalRequest): Promise<Approval>;
}

/** The body of POST …/approvals (ReturnAddress.createApproval). */
export interface ApprovalRequest {
  question: string;
  details?: string;
  options?: { id: string; label: string }[];
  fields?: ApprovalFieldSpec[];
  expires_in_seconds?: number;
  max_responses?: number;
}
