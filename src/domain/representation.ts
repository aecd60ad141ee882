// The API's JSON shapes of the records: Address in camelCase, Event in snake_case.
// Events are written as JSON text straight from the stored JSON of `data`/`metadata`, so listing
// a page never parses and re-serialises payloads; `eventObject` parses for callers that need
// a value (MCP structured content).
import { shownDedupeKey } from './dedupe-key.js';
import type { AddressRecord, EventRecord } from './model.js';
import type { Trust } from './trust.js';

export interface AddressView {
  id: string;
  slug: string;
  name: string;
  taskId?: string;
  email: string;
  createdAt: string;
  expiresAt: string;
}

export interface EventView {
  id: string;
  address_id: string;
  sequence: number;
  type: string;
  source: string;
  trust: Trust;
  data: unknown;
  metadata?: Record<string, string>;
  dedupe_key?: string;
  created_at: string;
  acknowledged_at?: string;
  delivery_count?: number;
  dead_at?: string;
  dead_reason?: string;
  quarantined_at?: string;
  released_at?: string;
}

const iso = (ms: number) => new Date(ms).toISOString();

export function addressView(a: AddressRecord, emailDomain: string): AddressView {
  return {
    id: a.id,
    slug: a.slug,
    name: a.name,
    ...(a.taskId !== null ? { taskId: a.taskId } : {}),
    email: `${a.slug}@${emailDomain}`,
    createdAt: iso(a.createdAt),
    expiresAt: iso(a.expiresAt),
  };
}

/** The Event as JSON text. */
export function eventJson(e: EventRecord): string {
  let s = `{"id":"${e.id}","address_id":"${e.addressId}","sequence":${e.sequence},"type":${JSON.stringify(e.type)},"source":${JSON.stringify(e.source)},"trust":${e.trust},"data":${e.data}`;
  if (e.metadata !== null) s += `,"metadata":${e.metadata}`;
  if (e.dedupeKey !== null) s += `,"dedupe_key":${JSON.stringify(shownDedupeKey(e.dedupeKey))}`;
  s += `,"created_at":"${iso(e.createdAt)}"`;
  if (e.acknowledgedAt !== null) s += `,"acknowledged_at":"${iso(e.acknowledgedAt)}"`;
  if (e.deliveryCount !== undefined) s += `,"delivery_count":${e.deliveryCount}`;
  if (e.deadAt !== undefined && e.deadAt !== null) s += `,"dead_at":"${iso(e.deadAt)}","dead_reason":${JSON.stringify(e.deadReason ?? '')}`;
  if (e.quarantinedAt !== undefined && e.quarantinedAt !== null) s += `,"quarantined_at":"${iso(e.quarantinedAt)}"`;
  if (e.releasedAt !== undefined && e.releasedAt !== null) s += `,"released_at":"${iso(e.releasedAt)}"`;
  return `${s}}`;
}

export function eventObject(e: EventRecord): EventView {
  return JSON.parse(eventJson(e)) as EventView;
}

export interface EventPageView {
  events: EventRecord[];
  nextCursor: number;
  hasMore: boolean;
}

/**
 * Rendered pages, by their `events` array. A store may hand the same frozen array to many readers
 * (the SQLite store caches pages until the address changes); each page is then rendered and
 * encoded once, and every reader is sent the same bytes.
 */
const renderedPages = new WeakMap<readonly EventRecord[], { nextCursor: number; hasMore: boolean; body: Buffer }>();

/** EventPage as JSON text: `{ events, next_cursor, has_more }`. */
export function eventPageJson(p: EventPageView): string {
  return `{"events":[${p.events.map(eventJson).join(',')}],"next_cursor":${p.nextCursor},"has_more":${p.hasMore}}`;
}

/**
 * EventPage as UTF-8 JSON, for HTTP responses. A Buffer goes to the socket as it is, where a string
 * of ~18 KB (a page of 50 events) was concatenated with the headers and encoded on every response.
 */
export function eventPageBody(p: EventPageView): Buffer {
  const cached = renderedPages.get(p.events);
  if (cached !== undefined && cached.nextCursor === p.nextCursor && cached.hasMore === p.hasMore) return cached.body;
  const body = Buffer.from(eventPageJson(p));
  if (Object.isFrozen(p.events)) renderedPages.set(p.events, { nextCursor: p.nextCursor, hasMore: p.hasMore, body });
  return body;
}
