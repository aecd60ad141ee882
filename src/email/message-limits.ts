// What a received message may hold before any library reads it (docs/design.md, "Untrusted parsing").
//
// The libraries that read mail do work per structure, not per byte: mailauth hashes the body once
// per distinct DKIM-Signature (200 signatures over 2 MB: 34 s), postal-mime walks every part and
// every nesting level (60,000 nested message/rfc822 parts: 17 s), and the address parser runs over
// every mailbox. So the structure is counted first, by one linear pass over the bytes, and a
// message beyond a cap is never handed to the library that would loop on it: it is stored with its
// top-level headers, the undecoded body and `parse_error` naming the cap (mime-to-event.ts).
// The counts are upper bounds (every Content-Type header line counts as a part, every container
// type as a nesting level), so the pass needs no MIME parser of its own.

/** DKIM-Signature headers verified; further ones are not shown to mailauth (a real mail has 1-3). */
export const MAX_DKIM_SIGNATURES = 8;
/** MIME parts (Content-Type header lines anywhere in the message) a message may have to be decoded. */
export const MAX_MIME_PARTS = 1000;
/** Nested containers (multipart/*, message/rfc822) a message may have to be decoded. */
export const MAX_MIME_DEPTH = 32;
/** Mailboxes ('@' signs) in the top-level From, To, Cc, Bcc, Reply-To and Sender headers together. */
export const MAX_ADDRESSES = 1000;

export interface MessageShape {
  dkimSignatures: number;
  parts: number;
  /** Upper bound of the nesting depth: every container-typed Content-Type counts. */
  containers: number;
  addresses: number;
}

const ADDRESS_HEADERS = new Set(['from', 'to', 'cc', 'bcc', 'reply-to', 'sender']);
const LF = 0x0a;
const AT = 0x40;

/** The name of a header line ("content-type" for "Content-Type: …"), lower-case, or null. */
function headerName(buf: Uint8Array, start: number, end: number): string | null {
  // Header names are short; a line whose colon is far in is not a header line.
  const limit = Math.min(end, start + 64);
  for (let i = start; i < limit; i++) {
    const c = buf[i]!;
    if (c === 0x3a)
      return i === start
        ? null
        : Buffer.from(buf.buffer, buf.byteOffset + start, i - start)
            .toString('latin1')
            .toLowerCase();
    if (c <= 0x20 || c >= 0x7f) return null;
  }
  return null;
}

/** Whether `buf[from, to)` starts (after white space) with a container media type. */
function isContainerType(buf: Uint8Array, from: number, to: number): boolean {
  let i = from;
  while (i < to && (buf[i] === 0x20 || buf[i] === 0x09 || buf[i] === 0x0d || buf[i] === LF)) i++;
  const head = Buffer.from(buf.buffer, buf.byteOffset + i, Math.min(16, to - i))
    .toString('latin1')
    .toLowerCase();
  return head.startsWith('multipart/') || head.startsWith('message/rfc822') || head.startsWith('message/global');
}

/** One pass over the bytes: each line is looked at once, a few bytes of it. */
export function messageShape(raw: Uint8Array): MessageShape {
  const shape: MessageShape = { dkimSignatures: 0, parts: 0, containers: 0, addresses: 0 };
  let inTopHeaders = true;
  /** Whether continuation lines belong to a top-level address header (their '@' count). */
  let inAddressHeader = false;
  let start = 0;
  const n = raw.byteLength;
  while (start < n) {
    let end = raw.indexOf(LF, start);
    if (end === -1) end = n;
    const first = raw[start];
    const blank = start === end || (first === 0x0d && start + 1 === end);
    if (blank) {
      inTopHeaders = false;
      inAddressHeader = false;
    } else if (first === 0x20 || first === 0x09) {
      if (inAddressHeader) shape.addresses += countByte(raw, start, end, AT);
    } else {
      inAddressHeader = false;
      const name = headerName(raw, start, end);
      if (name === 'content-type') {
        shape.parts++;
        // The value may be folded onto the next line: look at the rest of this line and the next one's start.
        const nextEnd = end < n ? raw.indexOf(LF, end + 1) : -1;
        const colon = raw.indexOf(0x3a, start);
        if (isContainerType(raw, colon + 1, nextEnd === -1 ? n : Math.min(nextEnd, end + 80))) shape.containers++;
      } else if (inTopHeaders && name === 'dkim-signature') {
        shape.dkimSignatures++;
      } else if (inTopHeaders && name !== null && ADDRESS_HEADERS.has(name)) {
        inAddressHeader = true;
        shape.addresses += countByte(raw, start, end, AT);
      }
    }
    start = end + 1;
  }
  return shape;
}

function countByte(buf: Uint8Array, from: number, to: number, byte: number): number {
  let count = 0;
  for (let i = buf.indexOf(byte, from); i !== -1 && i < to; i = buf.indexOf(byte, i + 1)) count++;
  return count;
}

/** Why a message of this shape is not given to the MIME parser, or null when it may be. */
export function structureProblem(shape: MessageShape): string | null {
  const why = 'MIME structure could not be decoded:';
  if (shape.parts > MAX_MIME_PARTS) return `${why} more than ${MAX_MIME_PARTS} MIME parts (${shape.parts} Content-Type headers), a limit of this service`;
  if (shape.containers > MAX_MIME_DEPTH) {
    return `${why} nesting may be deeper than ${MAX_MIME_DEPTH} containers (${shape.containers} multipart or message/rfc822 parts), a limit of this service`;
  }
  if (shape.addresses > MAX_ADDRESSES)
    return `${why} more than ${MAX_ADDRESSES} addresses in From, To, Cc, Bcc, Reply-To and Sender (${shape.addresses}), a limit of this service`;
  return null;
}

/**
 * The message with only its first MAX_DKIM_SIGNATURES DKIM-Signature headers, for mailauth, which
 * hashes the body once per distinct signature; the same bytes when it has no more than that.
 */
export function withBoundedDkimSignatures(raw: Buffer, shape: MessageShape): Buffer {
  if (shape.dkimSignatures <= MAX_DKIM_SIGNATURES) return raw;
  const kept: Buffer[] = [];
  let seen = 0;
  let dropping = false;
  let start = 0;
  while (start < raw.length) {
    let end = raw.indexOf(LF, start);
    end = end === -1 ? raw.length : end + 1;
    const first = raw[start];
    if (start + 1 >= end || (first === 0x0d && start + 2 === end)) {
      // The blank line: the rest is the body, kept whole.
      kept.push(raw.subarray(start));
      break;
    }
    if (first !== 0x20 && first !== 0x09) {
      dropping = headerName(raw, start, end) === 'dkim-signature' && ++seen > MAX_DKIM_SIGNATURES;
    }
    if (!dropping) kept.push(raw.subarray(start, end));
    start = end;
  }
  return Buffer.concat(kept);
}
