// The bytes of a mail kept beside its event (design.md, "Bounded work" and "Inbound email"): every
// message's raw RFC 822 bytes, and every attachment's decoded bytes, so an agent can check DKIM
// itself, archive or forward the message, and fetch any attachment by url with its sha256 as ETag.
//
// - `raw` is always {size, sha256, content_type: "message/rfc822", url}, whether the message parsed
//   or not; MAX_EMAIL_BYTES bounds it, as it bounds what SMTP accepts.
// - Every attachment carries `sha256` and `url`. Its bytes also sit inline as `content_base64`
//   while the event fits in MAX_EVENT_BYTES; beyond, the largest lose their inline copy first,
//   then `text`/`html` become null (the message is still whole at raw.url).
//
// Why an inline attachment is stored beside the event too, rather than served by decoding the
// event's JSON: one mechanism serves every url (the exact stored bytes, a chunk at a time, the same
// ETag path), and a route that decoded `data.attachments[n].content_base64` would also serve
// whatever an inbox delivery wrote there. The cost is that an inline attachment's bytes count twice
// toward MAX_BYTES_PER_ADDRESS, bounded by MAX_EVENT_BYTES.
import { createHash, randomBytes } from 'node:crypto';
import type { BlobInput, BlobName } from '../blobs/event-blob.js';

export interface EmailAttachment {
  filename: string | null;
  content_type: string;
  /** Decoded size in bytes. */
  size: number;
  /** The bytes inline, while the event fits in MAX_EVENT_BYTES; they are always at `url` too. */
  content_base64?: string;
  sha256: string;
  url: string;
}

/** The raw message, always stored beside the event (email-blobs.ts). */
export interface EmailRaw {
  size: number;
  sha256: string;
  content_type: 'message/rfc822';
  url: string;
}

/** The bounds the pure step keeps an event within (design.md, "Bounded work"). */
export interface EmailLimits {
  /** An attachment larger than this many bytes is stored beside the event. */
  inlineAttachmentBytes: number;
  /** MAX_EVENT_BYTES: what `data`'s JSON must stay within (with room for metadata). */
  maxEventBytes: number;
}
/** What of a decoded message this step keeps and bounds (mime-to-event.ts's EmailData has it all). */
export interface MailParts {
  text: string | null;
  html: string | null;
  attachments: EmailAttachment[];
  parse_error: string | null;
  raw: EmailRaw | null;
}

/** A message as data (urls empty) and the bytes to store beside it. */
export interface KeptMail<D extends MailParts> {
  data: D;
  blobs: BlobInput[];
}

/** Room kept in MAX_EVENT_BYTES for the metadata and the urls filled in per recipient. */
const EVENT_ROOM_BYTES = 16 * 1024;
/** Room per attachment for its sha256 and url, filled in per recipient. */
const ATTACHMENT_ROOM_BYTES = 256;
const jsonBytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));
const sha256Hex = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** The decoded message with every byte kept beside it, and its inline parts within `limits`. */
export function withinLimits<D extends MailParts>(raw: Uint8Array, data: D, attachmentBytes: Buffer[], limits: EmailLimits): KeptMail<D> {
  const blobs: BlobInput[] = [];
  data.attachments = data.attachments.map((a, i) => {
    const bytes = attachmentBytes[i] ?? Buffer.alloc(0);
    const sha256 = sha256Hex(bytes);
    blobs.push({ name: `attachments/${i}`, contentType: a.content_type, bytes, sha256 });
    const kept = { filename: a.filename, content_type: a.content_type, size: a.size };
    return a.size > limits.inlineAttachmentBytes || a.content_base64 === undefined
      ? { ...kept, sha256, url: '' }
      : { ...kept, content_base64: a.content_base64, sha256, url: '' };
  });
  const sha256 = sha256Hex(raw);
  data.raw = { size: raw.byteLength, sha256, content_type: 'message/rfc822', url: '' };
  blobs.push({ name: 'raw', contentType: 'message/rfc822', bytes: raw, sha256 });
  const budget = limits.maxEventBytes - Math.min(EVENT_ROOM_BYTES, limits.maxEventBytes / 8) - ATTACHMENT_ROOM_BYTES * data.attachments.length;
  if (Number.isFinite(budget) && jsonBytes(data) > budget) {
    const inline = data.attachments
      .map((a, i) => ({ a, i }))
      .filter(({ a }) => a.content_base64 !== undefined)
      .sort((x, y) => y.a.size - x.a.size);
    for (const { a } of inline) {
      delete a.content_base64;
      if (jsonBytes(data) <= budget) break;
    }
    if (jsonBytes(data) > budget) {
      data.text = null;
      data.html = null;
      data.parse_error ??= `the message's text does not fit in an event (MAX_EVENT_BYTES = ${limits.maxEventBytes}): it is at raw.url`;
    }
  }
  return { data, blobs };
}

/**
 * `data` of each recipient's event, as JSON text: the parsed message with its blobs' urls for that
 * event. The message is serialised once; each recipient's text is that one text joined around its
 * own urls (V8 keeps such a join as a rope over the shared parts), so a mail to 100 addresses is
 * not escaped 100 times. The placeholders carry a random nonce: no text in a mail can forge one.
 */
export function emailDataJson(parsed: KeptMail<MailParts>): { length: number; render: (urlFor: (name: BlobName) => string) => string } {
  const nonce = `ra${randomBytes(16).toString('hex')}_`;
  const names: BlobName[] = [];
  const placeholder = (name: BlobName) => `${nonce}${names.push(name) - 1}`;
  const d = parsed.data;
  const template = JSON.stringify({
    ...d,
    attachments: d.attachments.map((a, i) => ({ ...a, url: placeholder(`attachments/${i}`) })),
    raw: d.raw === null ? null : { ...d.raw, url: placeholder('raw') },
  });
  // Alternating: text, placeholder index, text, ...
  const parts = template.split(new RegExp(`${nonce}(\\d+)`));
  return {
    length: template.length,
    render: (urlFor) => {
      let json = parts[0] ?? '';
      for (let i = 1; i < parts.length; i += 2) json += JSON.stringify(urlFor(names[Number(parts[i])]!)).slice(1, -1) + (parts[i + 1] ?? '');
      return json;
    },
  };
}

/**
 * The parse result a worker posts back without the raw message's bytes: the main thread holds
 * them already, and a copy back would double a 25 MiB message in memory. `withRawBytes` puts the
 * caller's own bytes back.
 */
export function withoutRawBytes<D extends MailParts>(parsed: KeptMail<D>): KeptMail<D> {
  return { data: parsed.data, blobs: parsed.blobs.map((b) => (b.name === 'raw' ? { ...b, bytes: new Uint8Array(0) } : b)) };
}

export function withRawBytes<D extends MailParts>(parsed: KeptMail<D>, raw: Uint8Array): KeptMail<D> {
  return { data: parsed.data, blobs: parsed.blobs.map((b) => (b.name === 'raw' ? { ...b, bytes: raw } : b)) };
}
