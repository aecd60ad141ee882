// The error catalogue (design.md, "Errors"): every error the API can answer, with its stable code and
// HTTP status. Everything else that goes wrong is `internal` and its details stay in the log.

export const ERROR_CATALOGUE = {
  invalid_request: {
    status: 400,
    description:
      'The body, query or a header fails validation, a query parameter is unknown, or a required body is empty. The message names the field, parameter or header and what it must be.',
  },
  invalid_json: { status: 400, description: 'The body is not parseable JSON (on every JSON endpoint, whatever else is wrong with it).' },
  unauthorized: {
    status: 401,
    description: 'The bearer token is missing, malformed, or not the read token of this address; the message says which and the fix.',
  },
  credentials_rotated: {
    status: 401,
    description:
      "A long-poll, stream or waiting claim (or its MCP form) was opened with a read token that the address's owner has since rotated away (POST …/rotate): it ends at once, on every instance. Fetch the new read token from whoever rotated it; the old one is refused from now on.",
  },
  not_found: { status: 404, description: 'Unknown address, unknown event, wrong inbox secret, unknown route, or an id of the wrong shape.' },
  method_not_allowed: { status: 405, description: 'The path exists but not with this method; the Allow header lists the methods it has.' },
  idempotency_key_mismatch: { status: 409, description: 'The Idempotency-Key header and the body dedupe_key are both present and differ.' },
  lease_lost: {
    status: 409,
    description:
      "A claim's lease no longer holds its event (the lease id is a fencing token): the event was claimed again after this lease ran out or was nacked, or it is acknowledged or dead. Do not redo the side effects; the current lease holder settles the event.",
  },
  approval_closed: {
    status: 409,
    description: 'The approval takes no more answers: it has max_responses answers, expired, or was cancelled (POST to its page, or DELETE).',
  },
  not_quarantined: {
    status: 409,
    description: 'POST …/events/{eventId}/release on an event that was never quarantined by the sender policy: there is nothing to release.',
  },
  address_expired: { status: 410, description: 'The address is past expiresAt and refuses deliveries.' },
  payload_too_large: {
    status: 413,
    description:
      'The body is larger than MAX_PAYLOAD_BYTES (MAX_CAPTURE_BYTES on the capture URL; answered with Connection: close), or the event it makes would be larger than a whole address may hold (MAX_BYTES_PER_ADDRESS).',
  },
  unsupported_media_type: { status: 415, description: 'A JSON endpoint was sent a body whose Content-Type is not application/json.' },
  rate_limited: {
    status: 429,
    description:
      'Too many addresses created from this client IP (CREATE_RATE_LIMIT), too many deliveries to this address (DELIVERY_RATE_LIMIT), or from this client across addresses (DELIVERY_RATE_LIMIT_PER_IP), the last two when the operator set them; retry after Retry-After seconds.',
  },
  too_many_consumers: {
    status: 409,
    description: 'A read named a new consumer, but the address already holds MAX_CONSUMERS_PER_ADDRESS (100) consumers; delete one or reuse a name.',
  },
  too_many_subscriptions: {
    status: 409,
    description: 'A new webhook subscription, but the address already holds MAX_SUBSCRIPTIONS_PER_ADDRESS (default 10); delete one first.',
  },
  queue_full: {
    status: 429,
    description:
      'The address is full: MAX_EVENTS_PER_ADDRESS events or MAX_BYTES_PER_ADDRESS bytes, and pruning its acknowledged events cannot make room; acknowledge some, then retry after Retry-After seconds.',
  },
  unavailable: {
    status: 503,
    description:
      'The service cannot take this request now: storage cannot be reached or written (a database outage, a full disk; nothing was stored), or capture bytes being received by all clients passed MAX_INFLIGHT_CAPTURE_BYTES. Retry after Retry-After seconds. Never sent for something the client did.',
  },
  too_many_streams: {
    status: 429,
    description:
      'The address already has MAX_STREAMS_PER_ADDRESS open event streams, or this client MAX_STREAMS_PER_CLIENT; close one, then retry after Retry-After seconds.',
  },
  too_many_approvals: {
    status: 429,
    description:
      'The address already holds MAX_PENDING_APPROVALS (100) pending approvals; cancel one (DELETE …/approvals/{id}) or wait until one is answered or expires, then retry after Retry-After seconds.',
  },
  blocked: {
    status: 403,
    description:
      "This client's IP address is in the operator's block list (BLOCK_CIDRS): creating addresses and delivering from it are refused. Nothing to retry; ask the operator.",
  },
  internal: { status: 500, description: 'An unexpected server error. Nothing about it is revealed; it is logged.' },
} as const;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Extra response headers, e.g. Retry-After or Allow. */
    readonly headers: Readonly<Record<string, string>> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ApiError';
    this.status = ERROR_CATALOGUE[code].status;
  }
}

/**
 * The error code each answered request carried, by its reply object (set where every error is
 * answered): the metrics tell a 429 queue_full from a 429 rate_limited by it, without reading bodies.
 */
export const answeredErrorCodes = new WeakMap<object, ErrorCode>();

/** The documented error body, `{"error":{"code","message"}}`: the one place it is built. */
export function errorBody(code: ErrorCode, message: string): { error: { code: ErrorCode; message: string } } {
  return { error: { code, message } };
}

/** What a caller is told of any internal failure; the details stay in the log. */
export const INTERNAL_MESSAGE = 'Internal error. It has been logged; retrying later may help.';

/** The body of an internal failure, for transports that answer it themselves (MCP). */
export const internalErrorBody = () => errorBody('internal', INTERNAL_MESSAGE);

/** One message for every 404 of the inbox, so that a wrong secret and an unknown address look alike. */
export const INBOX_NOT_FOUND = 'No inbox at this URL.';

export const notFound = (what: string) => new ApiError('not_found', `${what} not found.`);
/** The realm of every 401's `WWW-Authenticate: Bearer realm="…"` challenge. */
export const BEARER_REALM = 'return-address';

/**
 * A 401 with its challenge (RFC 9110 §11.6.1; RFC 6750 §3): `Bearer realm="return-address"`, plus
 * error="invalid_token" when a credential was sent but is not a valid read token of this address.
 */
export const unauthorized = (message = 'A valid bearer read token for this address is required (Authorization: Bearer aa_read_…).', credentialSent = true) =>
  new ApiError('unauthorized', message, {
    'www-authenticate': `Bearer realm="${BEARER_REALM}"${credentialSent ? ', error="invalid_token"' : ''}`,
  });

/** A wait's end when the read token it was opened with is rotated away (design.md, "Credential rotation"). */
export const credentialsRotated = () =>
  new ApiError(
    'credentials_rotated',
    "The read token this wait was opened with was rotated: the address's owner replaced it (POST …/rotate), and it is refused from now on. Get the new read token from whoever rotated it, then open the wait again with it.",
    { 'www-authenticate': `Bearer realm="${BEARER_REALM}", error="invalid_token"` },
  );
