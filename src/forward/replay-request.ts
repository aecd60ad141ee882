// What `forward` sends a local handler for one event (design.md, "Forwarding to a local handler"). A captured request (§11) is
// replayed as it came: its method, its sub-path and query below the target URL, its headers without
// the hop-by-hop ones and Host, and its exact raw bytes, so a handler's signature check holds. Any
// other event is POSTed as its Event JSON, in the service's own text (numbers keep their digits).
import { createHash } from 'node:crypto';
import { type Event, sourceOf } from '@return-address/client';

export interface ReplayRequest {
  method: string;
  /** The target's origin, e.g. http://localhost:4000. */
  origin: string;
  /** Path and query as sent on the request line, e.g. /webhooks/github/pr-42?x=1. */
  path: string;
  /** Lower-case names; values as the bytes were sent (latin1 strings, as Node's http wants them). */
  headers: Record<string, string>;
  body: Buffer;
  /** The path the status line shows: the event's sub-path, or the target's path for Event JSON. */
  shownPath: string;
}

/** The part of a captured event's `data` a replay reads. */
interface CapturedData {
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  headers: Record<string, string>;
  raw: { size: number; sha256: string; encoding: 'utf8' | 'base64'; content?: string; url?: string };
}

/** RFC 9110 §7.6.1: headers meant for one connection only; Host is the target's, Content-Length recomputed. */
const NOT_REPLAYED = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
  // Would make the request wait for a 100 Continue the replay does not need.
  'expect',
]);
const CAPTURE_METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Whether `event` is a request the capture URL stored (its data has §11's shape). */
export function capturedData(event: Event): CapturedData | null {
  const d = event.data;
  if (!isObject(d) || typeof d.method !== 'string' || !CAPTURE_METHODS.has(d.method) || typeof d.path !== 'string') return null;
  if (!isObject(d.headers) || !isObject(d.query) || !isObject(d.raw)) return null;
  const raw = d.raw;
  if (typeof raw.sha256 !== 'string' || typeof raw.size !== 'number' || (raw.encoding !== 'utf8' && raw.encoding !== 'base64')) return null;
  return d as unknown as CapturedData;
}

/** The headers to replay: hop-by-hop ones (and those the Connection header names) left out. */
export function replayHeaders(headers: Record<string, string>): Record<string, string> {
  const named = new Set(
    (headers.connection ?? '')
      .split(',')
      .map((t) => t.trim().toLowerCase())
      .filter((t) => t !== ''),
  );
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (NOT_REPLAYED.has(name) || named.has(name) || typeof value !== 'string') continue;
    // data.headers holds UTF-8 text where the bytes were UTF-8; the wire wants those bytes back.
    out[name] = Buffer.from(value, 'utf8').toString('latin1');
  }
  return out;
}

/** A query object (§11: repeated keys as arrays) as a query string, after the target's own query. */
function queryString(targetSearch: string, query: Record<string, string | string[]>): string {
  const params = new URLSearchParams(targetSearch);
  for (const [k, v] of Object.entries(query)) for (const one of Array.isArray(v) ? v : [v]) params.append(k, one);
  const s = params.toString();
  return s === '' ? '' : `?${s}`;
}

/** The raw bytes of a captured request: inline, or fetched from raw.url; checked against raw.sha256. */
export async function rawBytes(data: CapturedData, fetchRaw: (url: string) => Promise<Buffer>): Promise<Buffer> {
  const raw = data.raw;
  let bytes: Buffer;
  if (typeof raw.content === 'string') bytes = Buffer.from(raw.content, raw.encoding === 'base64' ? 'base64' : 'utf8');
  else if (typeof raw.url === 'string') bytes = await fetchRaw(raw.url);
  else throw new RawBytesError('the event holds neither raw.content nor raw.url: its bytes cannot be replayed');
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  if (bytes.length !== raw.size || sha256 !== raw.sha256) {
    throw new RawBytesError(`the raw bytes do not match raw.size/raw.sha256 (got ${bytes.length} bytes, sha256 ${sha256}): refusing to replay a changed body`);
  }
  return bytes;
}

/** The bytes of a captured request cannot be had as they were: replaying would send something else. */
export class RawBytesError extends Error {
  override readonly name = 'RawBytesError';
}

export async function replayRequest(event: Event, target: URL, fetchRaw: (url: string) => Promise<Buffer>): Promise<ReplayRequest> {
  const basePath = target.pathname.replace(/\/+$/, '');
  const data = capturedData(event);
  if (data !== null) {
    return {
      method: data.method,
      origin: target.origin,
      path: `${basePath}${data.path}${queryString(target.search.slice(1), data.query)}` || '/',
      headers: replayHeaders(data.headers),
      body: await rawBytes(data, fetchRaw),
      shownPath: data.path === '' ? '/' : data.path,
    };
  }
  const body = Buffer.from(sourceOf(event) ?? JSON.stringify(event), 'utf8');
  return {
    method: 'POST',
    origin: target.origin,
    path: `${basePath || '/'}${target.search}`,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'return-address-forward',
      'x-return-address-event-id': event.id,
      'x-return-address-event-type': event.type,
      'x-return-address-sequence': String(event.sequence),
    },
    body,
    shownPath: basePath || '/',
  };
}
