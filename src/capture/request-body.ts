// A captured body, read the way its Content-Type says (design.md, "Capture URL"): JSON parsed, a form as an
// object, text as a string, multipart fields as an object and its files as attachments; anything
// else, and anything malformed (broken JSON, broken multipart, bytes that are not UTF-8), is null:
// never an error, because `raw` keeps the exact bytes whatever happens here.
import { isUtf8 } from 'node:buffer';
import busboy from 'busboy';
import { queryObject } from './captured-request.js';
import { checkJsonBody } from './json-body-pool.js';

export interface CapturedAttachment {
  filename: string | null;
  content_type: string;
  size: number;
  /** The file's bytes: inline as content_base64, or stored beside the event (capture.ts decides). */
  bytes: Buffer;
}

export interface ReadBody {
  /** JSON text of `data.body`: the sender's own JSON text when it was JSON, so its numbers keep every digit. */
  json: string;
  /** The same value parsed, for recognising the sender; undefined when `json` is "null". */
  value: unknown;
  attachments: CapturedAttachment[];
  /** The bytes as text when they are UTF-8 (raw.encoding "utf8"), else null (raw.encoding "base64"). */
  text: string | null;
}

const none = (text: string | null): ReadBody => ({ json: 'null', value: undefined, attachments: [], text });
/** Multipart bounds: enough for any real form, few enough that a hostile one costs little. */
const MULTIPART_LIMITS = { fields: 1000, files: 100, parts: 1100, fieldNameSize: 200 };

/** The media type of a Content-Type header, lower-case, without parameters ('' when absent). */
export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase();
}

const isJsonType = (t: string) => t === 'application/json' || t.endsWith('+json') || t === 'text/json';
const isTextType = (t: string) => t.startsWith('text/') || t === 'application/xml' || t.endsWith('+xml');

/**
 * `maxJsonBytes` (MAX_EVENT_BYTES): a text or form body longer than that cannot sit in an event, so it
 * is not turned into JSON at all (body null; its bytes are kept as raw). JSON is still parsed, for
 * recognising the sender, and capture.ts decides whether its text fits.
 */
export async function readBody(raw: Buffer, contentType: string | undefined, maxJsonBytes = Number.POSITIVE_INFINITY): Promise<ReadBody> {
  const text = isUtf8(raw) ? raw.toString('utf8') : null;
  if (raw.length === 0) return none(text);
  const type = mediaType(contentType);
  if (type === 'multipart/form-data') return readMultipart(raw, contentType!, text);
  if (text === null) return none(text);
  // No Content-Type at all: many senders that post JSON forget it.
  if (isJsonType(type) || type === '') return readJson(text);
  if (raw.length > maxJsonBytes) return none(text);
  if (type === 'application/x-www-form-urlencoded') {
    const value = queryObject(text);
    return { json: JSON.stringify(value), value, attachments: [], text };
  }
  if (isTextType(type)) return { json: JSON.stringify(text), value: text, attachments: [], text };
  return none(text);
}

async function readJson(text: string): Promise<ReadBody> {
  const checked = await checkJsonBody(text);
  return checked === null ? none(text) : { json: checked.json, value: checked.value, attachments: [], text };
}

function readMultipart(raw: Buffer, contentType: string, text: string | null): Promise<ReadBody> {
  return new Promise((resolve) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: { 'content-type': contentType }, limits: MULTIPART_LIMITS, defParamCharset: 'utf8' });
    } catch {
      // No boundary, or not a multipart type busboy knows.
      return resolve(none(text));
    }
    const fields: Record<string, string | string[]> = Object.create(null);
    const attachments: CapturedAttachment[] = [];
    let failed = false;
    parser.on('field', (name, value) => {
      const prev = fields[name];
      // Appended in place, never copied: a repeated field costs linear time.
      if (prev === undefined) fields[name] = value;
      else if (Array.isArray(prev)) prev.push(value);
      else fields[name] = [prev, value];
    });
    parser.on('file', (_name, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const content = Buffer.concat(chunks);
        attachments.push({ filename: info.filename ?? null, content_type: info.mimeType, size: content.length, bytes: content });
      });
    });
    parser.on('error', () => {
      failed = true;
      resolve(none(text));
    });
    parser.on('close', () => {
      if (!failed) resolve({ json: JSON.stringify(fields), value: fields, attachments, text });
    });
    parser.end(raw);
  });
}
