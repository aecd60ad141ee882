// A captured body, read the way its Content-Type says (design.md, "Capture URL"): JSON parsed, a form as an
// object, text as a string, multipart fields as an object and its files as attachments; anything
// else, and anything malformed (broken JSON, broken multipart, bytes that are not UTF-8), is null:
// never an error, because `raw` keeps the exact bytes whatever happens here.
import { isUtf8 } from 'node:buffer';
import busboy from 'busboy';
import { MAX_VALUE_DEPTH, nestsDeeperThan } from '../domain/json-depth.js';
import { queryObject } from './captured-request.js';

export interface CapturedAttachment {
  filename: string | null;
  content_type: string;
  size: number;
  content_base64: string;
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

export async function readBody(raw: Buffer, contentType: string | undefined): Promise<ReadBody> {
  const text = isUtf8(raw) ? raw.toString('utf8') : null;
  if (raw.length === 0) return none(text);
  const type = mediaType(contentType);
  if (type === 'multipart/form-data') return readMultipart(raw, contentType!, text);
  if (text === null) return none(text);
  // No Content-Type at all: many senders that post JSON forget it.
  if (isJsonType(type) || type === '') return readJson(text);
  if (type === 'application/x-www-form-urlencoded') {
    const value = queryObject(text);
    return { json: JSON.stringify(value), value, attachments: [], text };
  }
  if (isTextType(type)) return { json: JSON.stringify(text), value: text, attachments: [], text };
  return none(text);
}

function readJson(text: string): ReadBody {
  // A byte-order mark is not JSON, but some senders put one first.
  const json = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return none(text);
  }
  // data.body sits one level inside data, whose nesting is bounded like endpoint 6's.
  if (nestsDeeperThan(json, MAX_VALUE_DEPTH - 1)) return none(text);
  return { json, value, attachments: [], text };
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
      fields[name] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
    });
    parser.on('file', (_name, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const content = Buffer.concat(chunks);
        attachments.push({ filename: info.filename ?? null, content_type: info.mimeType, size: content.length, content_base64: content.toString('base64') });
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
