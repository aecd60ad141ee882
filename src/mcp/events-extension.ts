// The MCP Events extension (io.modelcontextprotocol/events) for revision 2026-07-28 (design.md,
// "MCP, current revision"): events/list, events/poll and events/stream over one address's queue.
// The cursor is our sequence as a decimal string, then `@` and the store epoch ("42@<epoch>"): every
// way to read (GET …/events, the SSE stream, named consumers, the MCP tools, these methods) speaks
// the same position, a bare sequence is taken too, and a cursor of another epoch (from before a
// restore) starts again from the start with truncated: true (design.md, "Store epoch"); an occurrence's
// eventId is our event id and its data is our Event, byte for byte as GET …/events sends it.
// Event types: the catch-all return_address.event, and one per way in (return_address.inbox,
// .capture, .email, .approval, .service: the catch-all narrowed to that trust.ingress), so a host
// can subscribe to mail alone without knowing our filters. A null cursor is the start of what the
// queue keeps, not the extension's "now" (design.md says why); maxAgeMs bounds the replay.
// Every event type offers poll, push and webhook (events/subscribe: events-subscribe.ts).

import { ApiError } from '../domain/errors.js';
import { EVENT_STATE_NAMES, type EventFilter, isEmptyFilter, MAX_MATCH_CONDITIONS, MAX_TYPE_PATTERNS, parseEventFilter } from '../domain/event-filter.js';
import type { AddressRecord, EventRecord } from '../domain/model.js';
import { eventJson } from '../domain/representation.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';
import { TRUST_INGRESSES, type TrustIngress, UNTRUSTED_CONTENT } from '../domain/trust.js';
import type { EpochStore } from '../epoch/epoch-store.js';
import { Event } from '../http/schemas.js';
import { UNAVAILABLE_RETRY_AFTER_SECONDS } from '../storage/store-unavailable.js';
import { epochMeta, epochMetaMembers } from './event-results.js';
import { prunedBefore, startOf } from './events-position.js';

export const EVENTS_EXTENSION = 'io.modelcontextprotocol/events';
/** The catch-all event type: every event that lands on the address (narrowed by its arguments). */
export const EVENT_NAME = 'return_address.event';
/** Payloads above this carry a reference instead of the Event's data (the extension's payload bound). */
export const MAX_PAYLOAD_BYTES = 256 * 1024;
/** What a poll that drained the queue suggests waiting before the next one. */
export const NEXT_POLL_MS = 2_000;
export const DEFAULT_POLL_EVENTS = 100;
/** Bytes of stored event JSON one poll result holds at most (a larger single event still comes, as a reference). */
export const POLL_PAGE_BYTES = 1024 * 1024;
/** A push stream's heartbeat interval by default; the SEP asks for one at least every 30 s. */
export const DEFAULT_HEARTBEAT_MS = 15_000;
export const MIN_HEARTBEAT_MS = 1_000;
export const MAX_HEARTBEAT_MS = 30_000;

/** The extension's error codes (SEP-3415, "Error Handling"). */
export const NOT_FOUND = -32023;
export const RESOURCE_EXHAUSTED = -32025;
/** events/stream's terminated error when the read token it was opened with is rotated away. */
export const CREDENTIALS_ROTATED = -32001;
export const INVALID_PARAMS = -32602;

/** A request the extension refuses: answered as a JSON-RPC error, never a 500. */
export class EventsError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/**
 * A store outage over MCP (design.md, "Bounded work": honest status): as the HTTP API's 503 `unavailable`, a
 * temporary condition, not a bug; nothing was changed and the same request may be sent again.
 */
export function unavailableEventsError(): EventsError {
  return new EventsError(
    -32603,
    `Service unavailable: storage cannot be reached or written right now; nothing was changed. Retry after ${UNAVAILABLE_RETRY_AFTER_SECONDS} s.`,
    { code: 'unavailable', retryAfterSeconds: UNAVAILABLE_RETRY_AFTER_SECONDS },
  );
}

const invalid = (message: string) => new EventsError(INVALID_PARAMS, `Invalid params: ${message}`);

const ARGUMENTS_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    type: {
      description: `Only events of this type: exact ("stripe.invoice.paid") or a prefix ending in .* ("stripe.*"); a list for any of several (at most ${MAX_TYPE_PATTERNS}).`,
      anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' }, maxItems: MAX_TYPE_PATTERNS }],
    },
    match: {
      description:
        `Only events where every dotted path equals its value: {"data.from.address": "noreply@github.com"} or ["data.from.address=noreply@github.com"] ` +
        `(at most ${MAX_MATCH_CONDITIONS}). Filter provider events on trust, never on a field inside data that any sender can write.`,
      anyOf: [
        { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean', 'null'] } },
        { type: 'array', items: { type: 'string' }, maxItems: MAX_MATCH_CONDITIONS },
      ],
    },
    state: { type: 'string', enum: [...EVENT_STATE_NAMES], description: `Which events: ${EVENT_STATE_NAMES.join(', ')} (default all).` },
  },
} as const;

/** Our Event as JSON Schema (the route schema, without TypeBox's symbols). */
const PAYLOAD_SCHEMA = JSON.parse(JSON.stringify(Event)) as Record<string, unknown>;

const CURSOR_HELP =
  'The cursor is the sequence and the store epoch as a string ("42@<epoch>"; a bare sequence, as GET …/events speaks it, is taken too): ' +
  'null is the start of what the queue keeps (the event you wait for may have come before you subscribed; maxAgeMs bounds how far back), ' +
  'any cursor this server returned resumes exactly after it, and one from before a restore (another epoch) starts again from the ' +
  'start with truncated: true (skip event ids you handled).';

/** What each way in is, for its event type's description. */
const INGRESS_HELP: Record<TrustIngress, string> = {
  inbox: 'HTTP deliveries to the inbox URL (whoever holds the URL writes anything; trust.verified is null)',
  capture: "callbacks to the capture URL (a provider's webhook; trust.verified says whether its signature checked)",
  email: 'inbound email (trust.verified says whether DMARC passed, aligned)',
  approval: "a person's answers on an approval page",
  service: 'events the service appends itself (approval.expired)',
};

/** The event type names: the catch-all, then one per way in. */
export const EVENT_TYPES: ReadonlyMap<string, TrustIngress | undefined> = new Map<string, TrustIngress | undefined>([
  [EVENT_NAME, undefined],
  ...TRUST_INGRESSES.map((i): [string, TrustIngress] => [`return_address.${i}`, i]),
]);

function describeType(ingress: TrustIngress | undefined): string {
  const what =
    ingress === undefined
      ? 'Every event that lands on this return address (HTTP callbacks to its inbox or capture URL, inbound email, approval answers, ' +
        'events of the service), in sequence order'
      : `The events of this return address that came in as ${INGRESS_HELP[ingress]} (trust.ingress "${ingress}"), in sequence order`;
  return `${what}; the arguments narrow it with the filters of GET …/events. ${CURSOR_HELP} ${UNTRUSTED_CONTENT}`;
}

/** events/list: the catch-all and one type per way in, each with our filters and our Event. */
export function listEventTypes(): Record<string, unknown> {
  return {
    resultType: 'complete',
    events: [...EVENT_TYPES].map(([name, ingress]) => ({
      name,
      description: describeType(ingress),
      delivery: ['poll', 'push', 'webhook'],
      inputSchema: ARGUMENTS_SCHEMA,
      payloadSchema: PAYLOAD_SCHEMA,
    })),
  };
}

export interface Subscription {
  /** The event type's name (the occurrences carry it). */
  name: string;
  /** The client's cursor; 0 for null. */
  cursor: number;
  /** The store epoch the cursor was given in, when it names one (design.md, "Store epoch"). */
  epoch: string | undefined;
  /** Replay nothing older than this. */
  maxAgeMs: number | undefined;
  filter: EventFilter | undefined;
}

const isScalar = (v: unknown) => v === null || ['string', 'number', 'boolean'].includes(typeof v);

/** Reads {name, arguments, cursor, maxAgeMs} of events/poll and events/stream; a bad one is InvalidParams or NotFound. */
export function readSubscription(params: Record<string, unknown>): Subscription {
  const name = params.name;
  if (typeof name !== 'string') throw invalid(`params.name must be an event type's name ("${EVENT_NAME}" or another from events/list).`);
  if (!EVENT_TYPES.has(name)) {
    throw new EventsError(
      NOT_FOUND,
      `Unknown event type '${name.slice(0, 100)}': events/list names this server's types (${[...EVENT_TYPES.keys()].join(', ')}).`,
      {
        kind: 'event',
      },
    );
  }
  const ingress = EVENT_TYPES.get(name);
  const args = params.arguments ?? {};
  if (typeof args !== 'object' || args === null || Array.isArray(args)) throw invalid('params.arguments must be an object (type, match, state).');
  const a = args as Record<string, unknown>;
  for (const key of Object.keys(a)) {
    if (!['type', 'match', 'state'].includes(key)) throw invalid(`unknown argument '${key.slice(0, 100)}': the arguments are type, match and state.`);
  }
  if (a.type !== undefined && typeof a.type !== 'string' && !(Array.isArray(a.type) && a.type.every((t) => typeof t === 'string'))) {
    throw invalid("argument 'type' must be a string or an array of strings.");
  }
  if (
    a.match !== undefined &&
    !(Array.isArray(a.match)
      ? a.match.every((m) => typeof m === 'string')
      : typeof a.match === 'object' && a.match !== null && Object.values(a.match).every(isScalar))
  ) {
    throw invalid('argument \'match\' must be an object of path: value (string, number, boolean or null) or an array of "path=value" strings.');
  }
  if (a.state !== undefined && typeof a.state !== 'string') throw invalid(`argument 'state' must be one of ${EVENT_STATE_NAMES.join(', ')}.`);
  let filter: EventFilter;
  try {
    filter = parseEventFilter(
      { type: a.type as string | string[] | undefined, match: a.match as Record<string, string> | string[] | undefined, state: a.state as string | undefined },
      'argument',
    );
  } catch (err) {
    if (err instanceof ApiError && err.status < 500) throw invalid(err.message);
    throw err;
  }
  // A per-ingress type is the catch-all with one condition more, which the client cannot override.
  if (ingress !== undefined) filter = { ...filter, match: [...filter.match, { root: 'trust', path: ['ingress'], value: ingress }] };
  const maxAge = params.maxAgeMs;
  const cursor = readEpochCursor(params.cursor);
  return {
    name,
    cursor: cursor.after,
    epoch: cursor.epoch,
    maxAgeMs: maxAge === undefined || maxAge === null ? undefined : readInteger(params, 'maxAgeMs', 0, Number.MAX_SAFE_INTEGER, 0),
    filter: isEmptyFilter(filter) ? undefined : filter,
  };
}

/**
 * The opaque cursor: our sequence in decimal, then `@` and the store epoch it was given in (a bare
 * sequence, as GET …/events speaks it, has no epoch to check); null or absent is 0, the start of
 * what the queue keeps.
 */
export function readEpochCursor(cursor: unknown): { after: number; epoch: string | undefined } {
  if (cursor === null || cursor === undefined) return { after: 0, epoch: undefined };
  const m = typeof cursor === 'string' ? /^([0-9]{1,16})(?:@([0-9A-Za-z_-]{1,64}))?$/.exec(cursor) : null;
  if (m && Number(m[1]) <= Number.MAX_SAFE_INTEGER) return { after: Number(m[1]), epoch: m[2] };
  throw invalid('params.cursor must be null or a cursor this server returned (a sequence written in decimal digits, then @ and the store epoch).');
}

/** The sequence of a cursor (its epoch unchecked). */
export const readCursor = (cursor: unknown): number => readEpochCursor(cursor).after;

/** The cursor this server hands out: the sequence in the store's epoch. */
export const cursorOf = (sequence: number, epoch: string): string => `${sequence}@${epoch}`;

/**
 * Where a subscription's cursor points in this store: a cursor of another epoch (given before a
 * restore, which reuses sequences) points nowhere, so the read starts again from the start and says
 * truncated (events may come again: a client skips the ids it handled).
 */
export const staleCursor = (sub: Subscription, epoch: string): boolean => sub.epoch !== undefined && sub.epoch !== epoch;

/** An integer param within bounds, or its default. */
export function readInteger(params: Record<string, unknown>, key: string, min: number, max: number, def: number): number {
  const v = params[key];
  if (v === undefined || v === null) return def;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw invalid(`params.${key} must be an integer from ${min} to ${max}.`);
  return v;
}

/**
 * One occurrence as JSON text: {eventId, name, timestamp, data: Event[, cursor]}. The Event is
 * spliced in as stored, so its numbers keep every digit. One whose occurrence would exceed
 * MAX_PAYLOAD_BYTES (the whole occurrence, envelope included, as a stream frame or webhook body
 * carries it) carries `data.data = {omitted: true, size, raw: {url}}` instead of its data: the URL
 * answers that one event in full with the same bearer token, held in quarantine or not (state=all).
 */
export function occurrenceJson(e: EventRecord, name: string, baseUrl: string, epoch?: string): string {
  const cursor = epoch !== undefined ? `,"cursor":"${cursorOf(e.sequence, epoch)}"` : '';
  const occurrence = (json: string) => `{"eventId":"${e.id}","name":"${name}","timestamp":"${new Date(e.createdAt).toISOString()}","data":${json}${cursor}}`;
  const full = occurrence(eventJson(e));
  if (Buffer.byteLength(full) <= MAX_PAYLOAD_BYTES) return full;
  const url = `${baseUrl}/api/v1/addresses/${e.addressId}/events?after=${e.sequence - 1}&limit=1&state=all`;
  return occurrence(eventJson({ ...e, data: JSON.stringify({ omitted: true, size: Buffer.byteLength(e.data), raw: { url } }) }));
}

/** events/poll: the page after the cursor, as the result's JSON text; its `_meta` says the epoch and last sequence. */
export async function pollEvents(
  service: ReturnAddressService,
  epochs: EpochStore,
  address: AddressRecord,
  baseUrl: string,
  params: Record<string, unknown>,
  signal: AbortSignal,
): Promise<string> {
  const sub = readSubscription(params);
  const limit = readInteger(params, 'maxEvents', 1, DEFAULT_POLL_EVENTS, DEFAULT_POLL_EVENTS);
  const epoch = await epochs.epoch();
  const stale = staleCursor(sub, epoch);
  const start = await startOf(service, address, stale ? 0 : sub.cursor, sub.maxAgeMs, Date.now(), false);
  const page = await service.listEvents(
    address,
    { after: start.after, limit, wait: 0, maxBytes: POLL_PAGE_BYTES, ...(sub.filter ? { filter: sub.filter } : {}) },
    signal,
  );
  // Retention after the start shows in the page, or one read tells.
  const truncated = stale || start.truncated || (await prunedBefore(service, address, start.after, page.events[0], sub.filter !== undefined));
  const events = page.events.map((e) => occurrenceJson(e, sub.name, baseUrl)).join(',');
  // Read after the page, as the headers are: the last sequence is never below its events.
  const meta = await epochMeta(epochs, address.id);
  return (
    `{"resultType":"complete","events":[${events}],"cursor":"${cursorOf(page.nextCursor, epoch)}","truncated":${truncated},` +
    `"hasMore":${page.hasMore},"nextPollMs":${page.hasMore ? 0 : NEXT_POLL_MS},"notice":${JSON.stringify(UNTRUSTED_CONTENT)},` +
    `"_meta":{${epochMetaMembers(meta)}}}`
  );
}
