// The capture URL's rule (design.md, "Capture URL"): any request to it becomes one event, stored by the same
// ReturnAddressService.deliver as the inbox (same durability, group commit, sequence, dedupe, expiry
// and queue limit), with `data` describing the request exactly enough for an agent to act on it or
// to check a signature itself.
import { createHash } from 'node:crypto';
import type { AddressRecord, Delivery, EventInput } from '../domain/model.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';
import type { SigningSecrets } from '../domain/signing-secrets.js';
import { type CapturedRequest, queryObject } from './captured-request.js';
import { type ReadBody, readBody } from './request-body.js';
import { recognise } from './sender-recognition.js';
import { type SignatureCheck, checkSignature, signatureScheme } from './signature-verification.js';

export interface Captured {
  delivery: Delivery;
  /** The body as read, for the answer a handshake needs. */
  body: ReadBody;
}

export class Capture {
  constructor(
    private readonly service: ReturnAddressService,
    private readonly signingSecrets: SigningSecrets,
    private readonly now: () => number = Date.now,
  ) {}

  /** Stores `request` as an event of `address`, whose inbox secret it came with. */
  async capture(address: AddressRecord, inboxSecret: string, request: CapturedRequest): Promise<Captured> {
    const body = await readBody(request.body, request.headers['content-type']);
    const { type, source, dedupeKey } = recognise(request.headers, body.value);
    // The sealed secrets are read only for a signed request: an unsigned one costs no extra query.
    const secrets = signatureScheme(request.headers) === null ? {} : await this.signingSecrets.open(address, inboxSecret);
    const signature = checkSignature(request.headers, request.body, secrets, this.now());
    const input: EventInput = { type, source, dataJson: captureDataJson(request, body, signature) };
    const delivery = await this.service.deliver(address, input, dedupeKey, source);
    return { delivery, body };
  }
}

/**
 * `data` of a captured request, as JSON text built around the body's own JSON text. Keys in the order
 * of design.md, "Capture URL".
 */
export function captureDataJson(request: CapturedRequest, body: ReadBody, signature: SignatureCheck): string {
  const raw = request.body;
  const rawJson = `{"size":${raw.length},"sha256":"${createHash('sha256').update(raw).digest('hex')}",` +
    (body.text === null ? `"encoding":"base64","content":"${raw.toString('base64')}"}` : `"encoding":"utf8","content":${JSON.stringify(body.text)}}`);
  return `{"method":${JSON.stringify(request.method)},"path":${JSON.stringify(request.subPath)},` +
    `"query":${JSON.stringify(queryObject(request.query))},"headers":${JSON.stringify(request.headers)},` +
    `"content_type":${JSON.stringify(request.headers['content-type'] ?? null)},"body":${body.json},"raw":${rawJson},` +
    `"attachments":${JSON.stringify(body.attachments)},"remote_ip":${JSON.stringify(request.remoteIp)},"signature":${JSON.stringify(signature)}}`;
}
