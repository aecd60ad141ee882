// The capture URL's rule (design.md, "Capture URL"): any request to it becomes one event, stored by the same
// ReturnAddressService.deliver as the inbox (same durability, group commit, sequence, dedupe, expiry
// and queue limit), with `data` describing the request exactly enough for an agent to act on it or
// to check a signature itself.
import { createHash } from 'node:crypto';
import { type BlobInput, blobUrl } from '../blobs/event-blob.js';
import { base64JsonBytes, jsonStringBytes } from '../blobs/json-size.js';
import { newEventId } from '../domain/credentials.js';
import { captureDedupeKey, providerPrefix } from '../domain/dedupe-key.js';
import { ApiError } from '../domain/errors.js';
import type { AddressRecord, Delivery, EventInput } from '../domain/model.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';
import type { SigningSecrets } from '../domain/signing-secrets.js';
import { captureTrustJson } from './capture-trust.js';
import { type CapturedRequest, queryObject } from './captured-request.js';
import { isGithubFormDelivery, unwrapGithubFormPayload } from './form-payload.js';
import { type ReadBody, readBody } from './request-body.js';
import { recognise } from './sender-recognition.js';
import { checkSignature, type SignatureCheck, signatureScheme } from './signature-verification.js';

export interface Captured {
  delivery: Delivery;
  /** The body as read, for the answer a handshake needs. */
  body: ReadBody;
}

/** Where the event's blobs are named from, and the bound its JSON must keep (design.md, "Bounded work"). */
export interface CaptureLimits {
  baseUrl: string;
  /** MAX_EVENT_BYTES. */
  maxEventBytes: number;
}

export class Capture {
  constructor(
    private readonly service: ReturnAddressService,
    private readonly signingSecrets: SigningSecrets,
    private readonly limits: CaptureLimits,
    private readonly now: () => number = Date.now,
  ) {}

  /** Stores `request` as an event of `address`, whose inbox secret it came with. */
  async capture(address: AddressRecord, inboxSecret: string, request: CapturedRequest): Promise<Captured> {
    // A form larger than MAX_EVENT_BYTES is kept as bytes only, unparsed, except GitHub's: its URL-encoded
    // payload is up to ~3x the JSON it wraps, which may well fit (the form parser is linear in the body).
    const formLimit = isGithubFormDelivery(request.headers) ? Number.POSITIVE_INFINITY : this.limits.maxEventBytes;
    const body = unwrapGithubFormPayload(request.headers, await readBody(request.body, request.headers['content-type'], formLimit));
    const recognised = recognise(request.headers, body.value);
    const { type, source } = recognised;
    // The sealed secrets are read only for a signed request, or one whose key a provider's secret
    // guards (dedupe-key.ts): any other costs no extra query.
    const guarded = recognised.dedupeKey !== undefined && providerPrefix(recognised.dedupeKey) !== undefined;
    const secrets = signatureScheme(request.headers) === null && !guarded ? {} : await this.signingSecrets.open(address, inboxSecret);
    const signature = checkSignature(request.headers, request.body, secrets, this.now());
    const dedupeKey =
      recognised.dedupeKey === undefined
        ? undefined
        : captureDedupeKey(recognised.dedupeKey, (scheme) => secrets[scheme] !== undefined, signature.verified === true ? signature.scheme : null);
    // The id is drawn first: the urls of bytes stored beside the event name it.
    const id = newEventId(this.now());
    const built = boundedCaptureData(request, body, signature, {
      maxEventBytes: this.limits.maxEventBytes,
      urlFor: (name) => blobUrl(this.limits.baseUrl, address.id, id, name),
    });
    const input: EventInput = {
      type,
      source,
      dataJson: built.dataJson,
      id,
      blobs: built.blobs,
      // Judged against the address's sender policy (capture.require_signature) before it is stored.
      sender: { ingress: 'capture', signatureVerified: signature.verified },
    };
    this.service.observer.signature(
      signature.scheme === null ? 'unsigned' : signature.verified === null ? 'unverified' : signature.verified ? 'verified' : 'failed',
    );
    const delivery = await this.service.deliver(address, input, dedupeKey, source, 'capture', captureTrustJson(signature));
    return { delivery, body };
  }
}

/**
 * `data` within MAX_EVENT_BYTES (design.md, "Bounded work"; keys in the order of "Capture URL"): as today while it fits; else the largest
 * of the attachments and the raw bytes are stored beside the event (their entry gets `sha256` and
 * `url`, raw gets `content_type` and `url`, and no content), then `body` becomes null (its bytes are
 * at raw.url). What still does not fit (headers, query) is 413 naming MAX_EVENT_BYTES. Sizes are
 * counted before anything is escaped, so a body of control bytes never becomes a 6x copy.
 */
export function boundedCaptureData(
  request: CapturedRequest,
  body: ReadBody,
  signature: SignatureCheck,
  opts: { maxEventBytes: number; urlFor: (name: 'raw' | `attachments/${number}`) => string },
): { dataJson: string; blobs: BlobInput[] } {
  const raw = request.body;
  const sha256 = createHash('sha256').update(raw).digest('hex');
  const head =
    `{"method":${JSON.stringify(request.method)},"path":${JSON.stringify(request.subPath)},` +
    `"query":${JSON.stringify(queryObject(request.query))},"headers":${JSON.stringify(request.headers)},` +
    `"content_type":${JSON.stringify(request.headers['content-type'] ?? null)},"body":`;
  const tail = `,"remote_ip":${JSON.stringify(request.remoteIp)},"signature":${JSON.stringify(signature)}}`;
  // Room for the url-shaped entries and keys around the parts measured here.
  const fixed = Buffer.byteLength(head) + Buffer.byteLength(tail) + 1024;
  if (fixed > opts.maxEventBytes) {
    throw new ApiError(
      'payload_too_large',
      `This request's headers and query alone would take ${fixed} bytes stored, more than one event may hold ` +
        `(MAX_EVENT_BYTES = ${opts.maxEventBytes}): send fewer or shorter headers and query parameters.`,
    );
  }
  // raw inline: the UTF-8 text when it costs no more than base64 would (control bytes do), else base64.
  const base64Bytes = base64JsonBytes(raw.length);
  const textBytes = body.text !== null && raw.length <= opts.maxEventBytes ? jsonStringBytes(body.text) : Number.POSITIVE_INFINITY;
  const rawInlineBytes = Math.min(base64Bytes, textBytes) + 120;
  const bodyBytes = body.json.length <= opts.maxEventBytes ? Buffer.byteLength(body.json) : Number.POSITIVE_INFINITY;
  const attachmentBytes = body.attachments.map((a) => base64JsonBytes(a.size) + 400 + Buffer.byteLength(JSON.stringify(a.filename)) + a.content_type.length);

  const blobs: BlobInput[] = [];
  const aside = new Set<number>();
  let rawAside = false;
  let total = fixed + rawInlineBytes + bodyBytes + attachmentBytes.reduce((n, b) => n + b, 0);
  // The largest parts go beside the event first (attachments and the raw bytes alike, -1 is raw).
  const parts = [...attachmentBytes.map((bytes, i) => ({ i, bytes })), { i: -1, bytes: rawInlineBytes }].sort((x, y) => y.bytes - x.bytes);
  for (const { i, bytes } of parts) {
    if (total <= opts.maxEventBytes) break;
    if (i === -1) rawAside = true;
    else aside.add(i);
    total -= bytes - 400;
  }
  const bodyJson = total > opts.maxEventBytes ? 'null' : body.json;

  // Every attachment is kept beside the event with its sha256 and url (design.md, "Bounded work"),
  // its bytes also inline while they fit: one way to fetch any attachment, as for mail.
  const attachments = body.attachments.map((a, i) => {
    const sha = createHash('sha256').update(a.bytes).digest('hex');
    blobs.push({ name: `attachments/${i}`, contentType: a.content_type, bytes: a.bytes, sha256: sha });
    const kept = { filename: a.filename, content_type: a.content_type, size: a.size };
    const at = { sha256: sha, url: opts.urlFor(`attachments/${i}`) };
    return aside.has(i) ? { ...kept, ...at } : { ...kept, content_base64: a.bytes.toString('base64'), ...at };
  });
  let rawJson: string;
  if (rawAside) {
    const contentType = request.headers['content-type'] ?? 'application/octet-stream';
    blobs.push({ name: 'raw', contentType, bytes: raw, sha256 });
    rawJson =
      `{"size":${raw.length},"sha256":"${sha256}","encoding":${body.text === null ? '"base64"' : '"utf8"'},"content_type":${JSON.stringify(contentType)},` +
      `"url":${JSON.stringify(opts.urlFor('raw'))}}`;
  } else {
    rawJson =
      `{"size":${raw.length},"sha256":"${sha256}",` +
      (textBytes <= base64Bytes ? `"encoding":"utf8","content":${JSON.stringify(body.text)}}` : `"encoding":"base64","content":"${raw.toString('base64')}"}`);
  }
  return { dataJson: `${head}${bodyJson},"raw":${rawJson},"attachments":${JSON.stringify(attachments)}${tail}`, blobs };
}
