// Raw RFC 5322 message + SMTP envelope -> the event input of design.md, "Inbound email". Pure: no I/O, no
// clock, no randomness; the same bytes and envelope always give the same event.
//
// Shape rules (documented in llms-full.txt):
// - Every key of `data` is always present. An absent scalar is null (`from`, `subject`, `text`,
//   `html`, `message_id`, `in_reply_to`, `date`), an absent list is [] (`to`, `cc`, `references`,
//   `attachments`). A header that is present but empty keeps its empty string.
// - `from`, `to[]`, `cc[]` are {name, address}; name is null when the mailbox has none; address
//   groups are flattened into their members.
// - Ids (message_id, in_reply_to, references[]) carry no angle brackets; in_reply_to is the first id.
// - `date` is ISO 8601 (UTC) when the Date header parses, else null (the raw value stays in headers).
// - `headers` maps each lower-cased header name to its unfolded, undecoded value; a name that occurs
//   several times (Received, …) gets its values joined with "\n", in message order. Raw 8-bit header
//   bytes are read as UTF-8, or as windows-1252 on a line where they are not valid UTF-8.
// - `raw_size` is the size in bytes of the message as received (after SMTP dot-unstuffing).
// - `parse_error` is null, or says why the MIME structure could not be decoded; the event then holds
//   what could be read: the top-level headers, and the undecoded body as `text`.
// - Every byte kept (email-blobs.ts): the whole message is stored beside the event as `raw`
//   ({size, sha256, content_type: "message/rfc822", url}), parsed or not; every attachment carries
//   `sha256` and `url`, and its bytes also sit inline as `content_base64` while the event fits in
//   `maxEventBytes` (an attachment larger than `inlineAttachmentBytes` never does). Beyond, the
//   largest lose their inline copy first, then `text`/`html` become null, with `parse_error` saying so.
//
// Blob API (what the pure step returns and how the service stores it): `parseEmail(raw, limits)`
// returns `{ data, blobs }` (structured-clonable, so it can run in a worker): `data` with every url
// still empty (""), and `blobs` the bytes to store, each named `raw` or `attachments/{n}` with its
// content type and sha256. For each recipient the SMTP listener allocates an event id, renders
// `emailDataJson(parsed, name => blobUrl(base, addressId, eventId, name))` and delivers
// `{ id, dataJson, blobs }` through ReturnAddressService.deliver, which stores the blobs in the
// event's own transaction (and only when the event is new).
// - `extracted` = {otp_codes, links, reply_text}, read from subject, text and html (extraction.ts).
// - `authentication` = {spf, dkim, dmarc, summary} is filled by the SMTP listener, which knows the
//   connection (sender-authentication.ts); this pure step leaves it null.
// - `dedupe_key` is the Message-ID without brackets. An id the queue cannot take as a key (over 255
//   characters, or with control characters) becomes "sha256:<hex of the id>", so retries still
//   deduplicate. No Message-ID: no dedupe_key.

import { createHash } from 'node:crypto';
import PostalMime, { type Address, addressParser, decodeWords, type Email } from 'postal-mime';
import { emailDedupeKey } from '../domain/dedupe-key.js';
import type { EventInput } from '../domain/model.js';
import { type EmailAttachment, type EmailLimits, type EmailRaw, type KeptMail, withinLimits } from './email-blobs.js';
import { type ExtractedContent, extractContent } from './extraction.js';
import { MAX_ADDRESSES, MAX_MIME_DEPTH, messageShape, structureProblem } from './message-limits.js';
import type { SenderAuthentication } from './sender-authentication.js';

export type { EmailAttachment, EmailLimits, EmailRaw } from './email-blobs.js';

export const EMAIL_EVENT_TYPE = 'email.received';
export const EMAIL_EVENT_SOURCE = 'email';
/** Longest dedupe key the queue accepts (design.md, "Delivery and idempotency"). */
const MAX_DEDUPE_KEY_LENGTH = 255;

export interface EmailMailbox {
  name: string | null;
  address: string;
}

/** No bounds: every attachment inline, the text never dropped (tests and tools). */
export const UNBOUNDED_EMAIL: EmailLimits = { inlineAttachmentBytes: Number.POSITIVE_INFINITY, maxEventBytes: Number.POSITIVE_INFINITY };

/** The pure step's result: the message as data (urls empty) and the bytes to store beside it. */
/** The d= domains of the DKIM signatures that passed (sender-authentication.ts) ride beside it, kept out of data: a sender policy reads them. */
export type ParsedEmail = KeptMail<EmailData> & { dkimPassDomains?: string[] };

export interface EmailData {
  from: EmailMailbox | null;
  to: EmailMailbox[];
  cc: EmailMailbox[];
  subject: string | null;
  text: string | null;
  html: string | null;
  message_id: string | null;
  in_reply_to: string | null;
  references: string[];
  date: string | null;
  headers: Record<string, string>;
  attachments: EmailAttachment[];
  raw_size: number;
  parse_error: string | null;
  /** The whole message, stored beside the event (see EmailRaw); null only before the pure step has kept it. */
  raw: EmailRaw | null;
  extracted: ExtractedContent;
  /** Null only before the SMTP listener has checked the message. */
  authentication: SenderAuthentication | null;
}

/** What the SMTP dialogue said about one recipient's copy of a message. */
export interface SmtpEnvelope {
  /** MAIL FROM address; "" for the null sender `<>`. */
  mailFrom: string;
  /** The RCPT TO address this copy is for, as the client sent it. */
  rcptTo: string;
  remoteIp: string;
  /** The +tag of the recipient's local part, when there was one. */
  tag?: string | undefined;
}

export interface EmailEventInput extends EventInput {
  type: typeof EMAIL_EVENT_TYPE;
  source: typeof EMAIL_EVENT_SOURCE;
  data: EmailData;
  metadata: Record<string, string>;
}

interface HeaderField {
  key: string;
  value: string;
}

/** Parses a message once, every attachment inline; `emailEventInput` then makes the event of each recipient from it. */
export async function parseEmailMessage(raw: Uint8Array): Promise<EmailData> {
  return (await parseEmail(raw, UNBOUNDED_EMAIL)).data;
}

/** Parses a message once, within `limits`: the data (urls empty) and the bytes to store beside it. */
export async function parseEmail(raw: Uint8Array, limits: EmailLimits): Promise<ParsedEmail> {
  const { data, attachmentBytes } = await decodeMessage(raw);
  data.extracted = extractContent(data);
  return withinLimits(raw, data, attachmentBytes, limits);
}

/**
 * What is known of a message that was not parsed (the parser passed its time or memory budget,
 * mail-parse-pool.ts): the top-level headers, the undecoded body as `text` (or beside the event as
 * `raw`), and why. Bounded: one split and one header pass; address headers holding more than
 * MAX_ADDRESSES mailboxes are not parsed (their raw values stay in `headers`); no extraction runs.
 */
export function unparsedEmail(raw: Uint8Array, parseError: string, limits: EmailLimits): ParsedEmail {
  return withinLimits(raw, fromUnparsedMessage(raw, parseError, messageShape(raw).addresses <= MAX_ADDRESSES), [], limits);
}

async function decodeMessage(raw: Uint8Array): Promise<{ data: EmailData; attachmentBytes: Buffer[] }> {
  // Counted before any library sees the bytes (message-limits.ts): a structure past a cap is never decoded.
  const shape = messageShape(raw);
  const problem = structureProblem(shape);
  if (problem !== null) return { data: fromUnparsedMessage(raw, problem, shape.addresses <= MAX_ADDRESSES), attachmentBytes: [] };
  let parsed: Email;
  try {
    parsed = await PostalMime.parse(withUtf8HeaderBlock(raw), { attachmentEncoding: 'arraybuffer', maxNestingDepth: MAX_MIME_DEPTH });
  } catch (err) {
    // postal-mime gives up on pathological structure (nesting, header size limits): keep what a
    // plain split of the header block and the body can read.
    return { data: fromUnparsedMessage(raw, `MIME structure could not be decoded: ${errorMessage(err)}`), attachmentBytes: [] };
  }
  const data = fromHeaders(parsed.headers, raw.byteLength);
  data.text = parsed.text ?? null;
  data.html = parsed.html ?? null;
  const attachmentBytes = parsed.attachments.map((a) => {
    const c = a.content;
    return typeof c === 'string' ? Buffer.from(c, 'utf8') : c instanceof ArrayBuffer ? Buffer.from(c) : Buffer.from(c.buffer, c.byteOffset, c.byteLength);
  });
  data.attachments = parsed.attachments.map((a, i) => {
    const bytes = attachmentBytes[i]!;
    return { filename: a.filename, content_type: a.mimeType, size: bytes.byteLength, content_base64: bytes.toString('base64'), sha256: '', url: '' };
  });
  if (data.text === null && data.html === null && data.attachments.length === 0) {
    // A body the parser found no part in (a multipart whose boundary never appears, say) is kept
    // as it came, rather than dropped.
    const body = splitMessage(raw).body;
    if (/\S/.test(body)) {
      data.text = body;
      data.parse_error = 'no MIME part could be decoded; text holds the undecoded body';
    }
  }
  return { data, attachmentBytes };
}

/** The event of one recipient's copy, from a parsed message. */
export function emailEventInput(data: EmailData, envelope: SmtpEnvelope): EmailEventInput {
  const metadata: Record<string, string> = {
    smtp_mail_from: envelope.mailFrom,
    smtp_rcpt_to: envelope.rcptTo,
    remote_ip: envelope.remoteIp,
  };
  if (envelope.tag !== undefined) metadata.tag = envelope.tag;
  const event: EmailEventInput = { type: EMAIL_EVENT_TYPE, source: EMAIL_EVENT_SOURCE, data, metadata };
  // Stored in the email namespace (domain/dedupe-key.ts), shown as the Message-ID.
  if (data.message_id !== null) event.dedupe_key = emailDedupeKey(dedupeKeyFor(data.message_id));
  return event;
}

/** Both steps at once: raw message bytes and envelope -> the event input. */
export async function mimeToEvent(raw: Uint8Array, envelope: SmtpEnvelope): Promise<EmailEventInput> {
  return emailEventInput(await parseEmailMessage(raw), envelope);
}

export function dedupeKeyFor(messageId: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses
  const usable = messageId.length <= MAX_DEDUPE_KEY_LENGTH && !/[\u0000-\u001f\u007f]/.test(messageId);
  return usable ? messageId : `sha256:${createHash('sha256').update(messageId, 'utf8').digest('hex')}`;
}

/** The header-derived fields; body fields start empty. Without `parseAddresses`, from/to/cc stay empty. */
function fromHeaders(fields: readonly HeaderField[], rawSize: number, parseAddresses = true): EmailData {
  const mailboxes = parseAddresses ? mailboxesOf : () => [];
  const first = (key: string) => fields.find((f) => f.key === key)?.value;
  const all = (key: string) => fields.filter((f) => f.key === key).map((f) => f.value);
  const subject = first('subject');
  const messageIds = msgIds(first('message-id'));
  return {
    from: mailboxes([first('from') ?? ''])[0] ?? null,
    to: mailboxes(all('to')),
    cc: mailboxes(all('cc')),
    subject: subject === undefined ? null : decodeEncodedWords(subject),
    text: null,
    html: null,
    message_id: messageIds[0] ?? null,
    in_reply_to: msgIds(first('in-reply-to'))[0] ?? null,
    references: msgIds(all('references').join(' ')),
    date: isoDate(first('date')),
    headers: headerMap(fields),
    attachments: [],
    raw_size: rawSize,
    parse_error: null,
    raw: null,
    extracted: { otp_codes: [], links: [], reply_text: null },
    authentication: null,
  };
}

function fromUnparsedMessage(raw: Uint8Array, parseError: string, parseAddresses = true): EmailData {
  const { head, body } = splitMessage(withUtf8HeaderBlock(raw));
  const data = fromHeaders(parseHeaderBlock(head), raw.byteLength, parseAddresses);
  data.text = /\S/.test(body) ? body : null;
  data.parse_error = parseError;
  return data;
}

/** Header block and body, split at the first empty line, decoded as UTF-8 (invalid bytes -> U+FFFD). */
function splitMessage(raw: Uint8Array): { head: string; body: string } {
  const buf = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  const m = findBlankLine(buf);
  if (!m) return { head: buf.toString('utf8'), body: '' };
  // Line ends as the parser gives them for decoded parts: LF.
  return {
    head: buf.subarray(0, m.index).toString('utf8'),
    body: buf
      .subarray(m.index + m.length)
      .toString('utf8')
      .replace(/\r\n/g, '\n'),
  };
}

/** Where the header block ends: the empty line (index, length) that separates it from the body. */
function findBlankLine(buf: Buffer): { index: number; length: number } | null {
  // A message that starts with an empty line has no headers.
  if (buf[0] === 0x0a) return { index: 0, length: 1 };
  if (buf[0] === 0x0d && buf[1] === 0x0a) return { index: 0, length: 2 };
  const crlf = buf.indexOf('\r\n\r\n');
  const lf = buf.indexOf('\n\n');
  if (crlf === -1 && lf === -1) return null;
  if (lf === -1 || (crlf !== -1 && crlf < lf)) return { index: crlf + 2, length: 2 };
  return { index: lf + 1, length: 1 };
}

/** RFC 5322 header block -> fields, unfolded; lines that are not `name: value` are skipped. */
function parseHeaderBlock(head: string): HeaderField[] {
  const fields: HeaderField[] = [];
  for (const line of head.split(/\r?\n/)) {
    const last = fields.at(-1);
    if (/^[ \t]/.test(line)) {
      if (last) last.value += line;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    fields.push({ key: line.slice(0, colon).trim().toLowerCase(), value: line.slice(colon + 1).trim() });
  }
  return fields;
}

function headerMap(fields: readonly HeaderField[]): Record<string, string> {
  // A Map, then fromEntries: a header named __proto__ becomes an ordinary key.
  const joined = new Map<string, string>();
  for (const { key, value } of fields) {
    const v = value.replace(/\r?\n/g, ' ');
    const seen = joined.get(key);
    joined.set(key, seen === undefined ? v : `${seen}\n${v}`);
  }
  return Object.fromEntries(joined);
}

function mailboxesOf(values: readonly string[]): EmailMailbox[] {
  const out: EmailMailbox[] = [];
  for (const value of values) {
    if (value.trim() === '') continue;
    let parsed: Address[];
    try {
      parsed = addressParser(value, { flatten: true });
    } catch {
      continue;
    }
    for (const a of parsed) {
      const members = a.group ?? [a];
      for (const m of members) {
        const address = (m.address ?? '').trim();
        const name = m.name.trim();
        if (address === '' && name === '') continue;
        out.push({ name: name === '' ? null : name, address });
      }
    }
  }
  return out;
}

/** Message ids in a header value, without angle brackets; bare ids are split on whitespace. */
function msgIds(value: string | undefined): string[] {
  if (value === undefined) return [];
  const bracketed = [...value.matchAll(/<([^<>]*)>/g)].map((m) => (m[1] ?? '').trim()).filter((id) => id !== '');
  if (bracketed.length > 0) return bracketed;
  return value
    .split(/[\s,]+/)
    .map((id) => id.replace(/^<|>$/g, ''))
    .filter((id) => id !== '');
}

function isoDate(value: string | undefined): string | null {
  if (value === undefined) return null;
  const t = Date.parse(value.trim());
  return Number.isNaN(t) ? null : new Date(t).toISOString();
}

/** RFC 2047 words decoded; a value whose words do not decode cleanly is kept as it came. */
function decodeEncodedWords(value: string): string {
  try {
    const decoded = decodeWords(value);
    return decoded.includes('\uFFFD') && !value.includes('\uFFFD') ? value : decoded;
  } catch {
    return value;
  }
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Raw 8-bit header bytes are meant to be UTF-8 (RFC 6532), but old software writes Latin-1. The
 * parser would turn those bytes into U+FFFD; instead, each top-level header line that is not valid
 * UTF-8 is read as windows-1252 and re-encoded as UTF-8. Valid messages pass through untouched.
 */
function withUtf8HeaderBlock(raw: Uint8Array): Uint8Array {
  const buf = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  const blank = findBlankLine(buf);
  const headEnd = blank ? blank.index : buf.byteLength;
  if (isUtf8(buf.subarray(0, headEnd))) return raw;
  const latin1 = new TextDecoder('windows-1252');
  const lines: Buffer[] = [];
  let start = 0;
  while (start < headEnd) {
    const nl = buf.indexOf(0x0a, start);
    const end = nl === -1 || nl >= headEnd ? headEnd : nl + 1;
    const line = buf.subarray(start, end);
    lines.push(isUtf8(line) ? line : Buffer.from(latin1.decode(line), 'utf8'));
    start = end;
  }
  lines.push(buf.subarray(headEnd));
  return Buffer.concat(lines);
}

function isUtf8(bytes: Uint8Array): boolean {
  try {
    strictUtf8.decode(bytes);
    return true;
  } catch {
    return false;
  }
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
