// The MCP Events extension (io.modelcontextprotocol/events) for revision 2026-07-28 (design.md,
// "MCP, current revision"): events/list, events/poll and events/stream over one address's queue.
// The cursor is our sequence as a decimal string, so every way to read (GET …/events, the SSE
// stream, named consumers, the MCP tools, these methods) speaks the same position; an occurrence's
// eventId is our event id and its data is our Event, byte for byte as GET …/events sends it.
// Webhook delivery (events/subscribe) is not offered: each event type lists only poll and push.

import { ApiError } from '../domain/errors.js';
import { EVENT_STATE_NAMES, type EventFilter, isEmptyFilter, MAX_MATCH_CONDITIONS, MAX_TYPE_PATTERNS, parseEventFilter } from '../domain/event-filter.js';
import type { AddressRecord, EventRecord } from '../domain/model.js';
import { eventJson } from '../domain/representation.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';
import { UNTRUSTED_CONTENT } from '../domain/trust.js';
import { Event } from '../http/schemas.js';

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

/** events/list: one event type, the catch-all. */
export function listEventTypes(): Record<string, unknown> {
  return {
    resultType: 'complete',
    events: [
      {
        name: EVENT_NAME,
        description:
          'Every event that lands on this return address (HTTP callbacks to its inbox or capture URL, inbound email, approval answers), ' +
          'in sequence order; the arguments narrow it with the filters of GET …/events. The cursor is the sequence as a string ' +
          '(null: from the start of what is kept). ' +
          UNTRUSTED_CONTENT,
        delivery: ['poll', 'push'],
        inputSchema: ARGUMENTS_SCHEMA,
        payloadSchema: PAYLOAD_SCHEMA,
      },
    ],
  };
}

export interface Subscription {
  after: number;
  filter: EventFilter | undefined;
}

const isScalar = (v: unknown) => v === null || ['string', 'number', 'boolean'].includes(typeof v);

/** Reads {name, arguments, cursor} of events/poll and events/stream; a bad one is InvalidParams or NotFound. */
export function readSubscription(params: Record<string, unknown>): Subscription {
  if (params.name !== EVENT_NAME) {
    if (typeof params.name !== 'string') throw invalid(`params.name must be the event type's name ("${EVENT_NAME}", from events/list).`);
    throw new EventsError(NOT_FOUND, `Unknown event type '${params.name.slice(0, 100)}': this server has one, "${EVENT_NAME}".`, { kind: 'event' });
  }
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
  return { after: readCursor(params.cursor), filter: isEmptyFilter(filter) ? undefined : filter };
}

/** The opaque cursor: our sequence in decimal; null or absent is 0, the start of what the queue keeps. */
export function readCursor(cursor: unknown): number {
  if (cursor === null || cursor === undefined) return 0;
  if (typeof cursor === 'string' && /^[0-9]{1,16}$/.test(cursor) && Number(cursor) <= Number.MAX_SAFE_INTEGER) return Number(cursor);
  throw invalid('params.cursor must be null or a cursor this server returned (a sequence written in decimal digits).');
}

/** An integer param within bounds, or its default. */
export function readInteger(params: Record<string, unknown>, key: string, min: number, max: number, def: number): number {
  const v = params[key];
  if (v === undefined || v === null) return def;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw invalid(`params.${key} must be an integer from ${min} to ${max}.`);
  return v;
}

/**
 * Whether retention removed events after `after`: sequences have no gaps, so the first event kept
 * after the cursor is its next sequence unless some were pruned or expired in between.
 */
export async function truncatedAfter(service: ReturnAddressService, address: AddressRecord, after: number): Promise<boolean> {
  const first = await service.listEvents(address, { after, limit: 1, wait: 0 });
  const e = first.events[0];
  return e !== undefined && e.sequence > after + 1;
}

/**
 * One occurrence as JSON text: {eventId, name, timestamp, data: Event[, cursor]}. The Event is
 * spliced in as stored, so its numbers keep every digit. One whose JSON exceeds MAX_PAYLOAD_BYTES
 * carries `data.data = {omitted: true, size, raw: {url}}` instead of its data: the URL answers that
 * one event in full with the same bearer token.
 */
export function occurrenceJson(e: EventRecord, baseUrl: string, withCursor: boolean): string {
  let json = eventJson(e);
  if (Buffer.byteLength(json) > MAX_PAYLOAD_BYTES) {
    const url = `${baseUrl}/api/v1/addresses/${e.addressId}/events?after=${e.sequence - 1}&limit=1`;
    json = eventJson({ ...e, data: JSON.stringify({ omitted: true, size: Buffer.byteLength(e.data), raw: { url } }) });
  }
  const cursor = withCursor ? `,"cursor":"${e.sequence}"` : '';
  return `{"eventId":"${e.id}","name":"${EVENT_NAME}","timestamp":"${new Date(e.createdAt).toISOString()}","data":${json}${cursor}}`;
}

/** events/poll: the page after the cursor, as the result's JSON text. */
export async function pollEvents(
  service: ReturnAddressService,
  address: AddressRecord,
  baseUrl: string,
  params: Record<string, unknown>,
  signal: AbortSignal,
): Promise<string> {
  const sub = readSubscription(params);
  const limit = readInteger(params, 'maxEvents', 1, DEFAULT_POLL_EVENTS, DEFAULT_POLL_EVENTS);
  readInteger(params, 'maxAgeMs', 0, Number.MAX_SAFE_INTEGER, 0);
  const page = await service.listEvents(
    address,
    { after: sub.after, limit, wait: 0, maxBytes: POLL_PAGE_BYTES, ...(sub.filter ? { filter: sub.filter } : {}) },
    signal,
  );
  // Without a filter the page itself shows a gap; a filtered page may skip events legitimately.
  const first = page.events[0];
  const truncated = sub.filter === undefined ? first !== undefined && first.sequence > sub.after + 1 : await truncatedAfter(service, address, sub.after);
  const events = page.events.map((e) => occurrenceJson(e, baseUrl, false)).join(',');
  return (
    `{"resultType":"complete","events":[${events}],"cursor":"${page.nextCursor}","truncated":${truncated},` +
    `"hasMore":${page.hasMore},"nextPollMs":${page.hasMore ? 0 : NEXT_POLL_MS},"notice":${JSON.stringify(UNTRUSTED_CONTENT)}}`
  );
}
