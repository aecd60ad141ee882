// The six pure capture modules (src/capture/*) on a corpus of real-shaped requests
// (test/fixtures/capture/*.json, written by make-fixtures.mjs beside them): sender recognition,
// signatures, body reading, handshakes and the event's data, without HTTP or a store. Property
// tests hold the rules that no fixture list can cover: nothing a sender sends makes them throw
// (but a bad Idempotency-Key), raw always gives the exact bytes back, a signature holds only for its bytes.
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { boundedCaptureData } from '../../src/capture/capture.js';
import { type CapturedRequest, headersFromRaw, queryObject } from '../../src/capture/captured-request.js';

/** The event data a capture stores when nothing needs to go beside the event (no MAX_EVENT_BYTES bound here). */
const captureDataJson = (request: CapturedRequest, body: ReadBody, signature: SignatureCheck): string =>
  boundedCaptureData(request, body, signature, { maxEventBytes: Number.POSITIVE_INFINITY, urlFor: () => 'unused' }).dataJson;

import { handshakeAnswer } from '../../src/capture/handshake.js';
import { mediaType, type ReadBody, readBody } from '../../src/capture/request-body.js';
import { recognise } from '../../src/capture/sender-recognition.js';
import {
  checkSignature,
  isStandardWebhooksSecret,
  type SignatureCheck,
  signatureScheme,
  TIMESTAMP_TOLERANCE_SECONDS,
} from '../../src/capture/signature-verification.js';
import { ApiError } from '../../src/domain/errors.js';
import type { SigningSecretSet } from '../../src/domain/signing-secrets.js';

// Fixtures live in the source tree: dist/test/capture/*.js -> test/fixtures/capture/.
const FIXTURES = fileURLToPath(new URL('../../../test/fixtures/capture/', import.meta.url));

interface Fixture {
  name: string;
  about: string;
  request: { method: string; subPath: string; query: string; remoteIp: string; rawHeaders: string[]; body: { utf8: string } | { base64: string } };
  secrets: SigningSecretSet;
  nowMs: number;
  expect: {
    type: string;
    source: string;
    dedupeKey?: string | null;
    scheme?: string | null;
    verified?: boolean | null;
    reason?: string;
    handshake: { contentType: string; body: string } | null;
    body?: unknown;
    bodyJson?: string;
    bodyField?: [string, string];
    attachments?: unknown[];
    rawEncoding?: 'utf8' | 'base64';
    query?: Record<string, unknown>;
    headers?: Record<string, string>;
  };
}

const corpus: Fixture[] = readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((f) => ({ name: f.slice(0, -'.json'.length), ...JSON.parse(readFileSync(FIXTURES + f, 'utf8')) }));

function capturedRequest(f: Fixture): CapturedRequest {
  const b = f.request.body;
  return {
    method: f.request.method,
    subPath: f.request.subPath,
    query: f.request.query,
    remoteIp: f.request.remoteIp,
    headers: headersFromRaw(f.request.rawHeaders),
    body: 'utf8' in b ? Buffer.from(b.utf8, 'utf8') : Buffer.from(b.base64, 'base64'),
  };
}

describe('capture rules on the fixture corpus (test/fixtures/capture)', () => {
  it('the corpus covers every provider and signing scheme the capture URL knows', () => {
    assert.ok(corpus.length >= 25, `${corpus.length} fixtures`);
    const sources = new Set(corpus.map((f) => f.expect.source));
    for (const s of ['github', 'stripe', 'slack', 'webhook', 'https']) assert.ok(sources.has(s), `no fixture for ${s}`);
    const verdicts = new Set(corpus.map((f) => `${f.expect.scheme}:${f.expect.verified}`));
    for (const v of ['github:true', 'github:false', 'github:null', 'stripe:true', 'stripe:false', 'slack:true', 'standard_webhooks:false', 'null:null']) {
      assert.ok(verdicts.has(v), `no fixture with signature ${v}`);
    }
  });

  for (const f of corpus) {
    it(`${f.name}: ${f.about}`, async () => {
      const request = capturedRequest(f);
      const e = f.expect;
      const body = await readBody(request.body, request.headers['content-type']);
      const recognition = recognise(request.headers, body.value);
      assert.equal(recognition.type, e.type);
      assert.equal(recognition.source, e.source);
      if (e.dedupeKey !== undefined) assert.equal(recognition.dedupeKey, e.dedupeKey ?? undefined);

      const signature = checkSignature(request.headers, request.body, f.secrets, f.nowMs);
      assert.equal(signature.scheme, signatureScheme(request.headers));
      if (e.scheme !== undefined) assert.equal(signature.scheme, e.scheme);
      if (e.verified !== undefined) assert.equal(signature.verified, e.verified, signature.reason);
      if (e.reason !== undefined) assert.ok(signature.reason.includes(e.reason), signature.reason);

      assert.deepEqual(handshakeAnswer(request.method, request.query, body), e.handshake);

      // data, as stored: valid JSON whose raw gives back the exact bytes.
      const data = JSON.parse(captureDataJson(request, body, signature));
      assert.deepEqual(Object.keys(data), ['method', 'path', 'query', 'headers', 'content_type', 'body', 'raw', 'attachments', 'remote_ip', 'signature']);
      assert.equal(data.method, request.method);
      assert.equal(data.path, request.subPath);
      assert.equal(data.remote_ip, request.remoteIp);
      assert.deepEqual(data.signature, signature);
      assert.equal(data.content_type, request.headers['content-type'] ?? null);
      assert.equal(data.raw.size, request.body.length);
      assert.equal(data.raw.sha256, createHash('sha256').update(request.body).digest('hex'));
      const back = data.raw.encoding === 'utf8' ? Buffer.from(data.raw.content, 'utf8') : Buffer.from(data.raw.content, 'base64');
      assert.ok(back.equals(request.body), 'raw.content must decode to the exact bytes');
      if (e.rawEncoding) assert.equal(data.raw.encoding, e.rawEncoding);
      if (e.body !== undefined) assert.deepEqual(data.body, e.body);
      if (e.bodyJson !== undefined) assert.equal(body.json, e.bodyJson);
      if (e.bodyField) assert.equal(data.body[e.bodyField[0]], e.bodyField[1]);
      if (e.attachments) assert.deepEqual(data.attachments, e.attachments);
      if (e.query) assert.deepEqual(data.query, e.query);
      if (e.headers) for (const [k, v] of Object.entries(e.headers)) assert.equal(data.headers[k], v);
    });
  }
});

describe('recognise (sender recognition)', () => {
  it('refuses an Idempotency-Key it cannot store, naming the header', () => {
    for (const bad of ['', 'x'.repeat(256), 'a\u0000b']) {
      assert.throws(
        () => recognise({ 'idempotency-key': bad }, undefined),
        (err: unknown) => err instanceof ApiError && err.code === 'invalid_request' && /Idempotency-Key/.test(err.message),
      );
    }
  });

  it('property: any JSON body and provider headers give a type, a source and a key within bounds, never an error', () => {
    const headerNames = [
      'x-github-event',
      'x-github-delivery',
      'stripe-signature',
      'x-slack-signature',
      'x-slack-request-timestamp',
      'webhook-id',
      'svix-id',
      'x-shopify-webhook-id',
    ];
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...headerNames), fc.string({ maxLength: 300 })), fc.jsonValue({ maxDepth: 4 }), (headers, body) => {
        const r = recognise(headers, body);
        assert.match(r.type, /^[A-Za-z0-9][A-Za-z0-9_.:/-]*$/);
        assert.ok(['github', 'stripe', 'slack', 'webhook', 'https'].includes(r.source));
        if (r.dedupeKey !== undefined) {
          assert.ok(r.dedupeKey.length >= 1 && r.dedupeKey.length <= 255);
          assert.ok(![...r.dedupeKey].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f), 'no control characters');
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('checkSignature (signature verification)', () => {
  const hex = (secret: string, ...parts: string[]) => createHmac('sha256', secret).update(parts.join('')).digest('hex');
  const now = 1_764_000_000_000;

  it('property: a GitHub signature holds for its bytes and secret only', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), fc.string({ minLength: 1, maxLength: 64 }), fc.nat(), (bytes, secret, flip) => {
        const raw = Buffer.from(bytes);
        const h = { 'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}` };
        assert.equal(checkSignature(h, raw, { github: secret }, now).verified, true);
        assert.equal(checkSignature(h, raw, { github: `${secret}x` }, now).verified, false);
        if (raw.length > 0) {
          const changed = Buffer.from(raw);
          changed[flip % raw.length]! ^= 1;
          assert.equal(checkSignature(h, changed, { github: secret }, now).verified, false);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('Stripe and Slack accept a timestamp up to the tolerance either side of now, and refuse one past it', () => {
    const body = '{"id":"evt_1","object":"event","type":"charge.succeeded"}';
    for (const skew of [-TIMESTAMP_TOLERANCE_SECONDS, 0, TIMESTAMP_TOLERANCE_SECONDS, TIMESTAMP_TOLERANCE_SECONDS + 1, -TIMESTAMP_TOLERANCE_SECONDS - 1]) {
      const t = now / 1000 + skew;
      const ok = Math.abs(skew) <= TIMESTAMP_TOLERANCE_SECONDS;
      const stripe = checkSignature(
        { 'stripe-signature': `t=${t},v1=${'0'.repeat(64)},v1=${hex('s', `${t}.`, body)}` },
        Buffer.from(body),
        { stripe: 's' },
        now,
      );
      assert.equal(stripe.verified, ok, `stripe, skew ${skew}: ${stripe.reason}`);
      const slack = checkSignature(
        { 'x-slack-request-timestamp': String(t), 'x-slack-signature': `v0=${hex('s', `v0:${t}:`, body)}` },
        Buffer.from(body),
        { slack: 's' },
        now,
      );
      assert.equal(slack.verified, ok, `slack, skew ${skew}: ${slack.reason}`);
    }
    const noV1 = checkSignature({ 'stripe-signature': `t=${now / 1000},v0=abc` }, Buffer.from(body), { stripe: 's' }, now);
    assert.deepEqual([noV1.verified, noV1.reason], [false, 'Stripe-Signature holds no v1 signature']);
    const noTs = checkSignature({ 'x-slack-signature': 'v0=00' }, Buffer.from(body), { slack: 's' }, now);
    assert.equal(noTs.verified, false);
    assert.match(noTs.reason, /timestamp is missing/);
  });

  it('Standard Webhooks and Svix headers verify a delivery signed now, under webhook-* or svix-* names', () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const body = '{"type":"user.created","data":{"id":"usr_1"}}';
    const stamp = new Date();
    const sig = new Webhook(secret).sign('msg_1', stamp, body);
    const ts = String(Math.floor(stamp.getTime() / 1000));
    for (const p of ['webhook', 'svix']) {
      const h = { [`${p}-id`]: 'msg_1', [`${p}-timestamp`]: ts, [`${p}-signature`]: sig };
      assert.equal(checkSignature(h, Buffer.from(body), { standard_webhooks: secret }, Date.now()).verified, true, p);
      assert.equal(checkSignature(h, Buffer.from(`${body} `), { standard_webhooks: secret }, Date.now()).verified, false, p);
    }
    assert.equal(isStandardWebhooksSecret(secret), true);
    assert.equal(isStandardWebhooksSecret('not base64 !!'), false);
  });
});

describe('readBody (request body)', () => {
  it('mediaType lower-cases and drops parameters', () => {
    assert.equal(mediaType('Application/JSON ; charset=UTF-8'), 'application/json');
    assert.equal(mediaType(undefined), '');
    assert.equal(mediaType('application/vnd.api+json'), 'application/vnd.api+json');
  });

  it('property: any bytes under any content type read without an error, and data.raw gives them back', async () => {
    const types = fc.constantFrom(
      undefined,
      'application/json',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'multipart/form-data',
      'application/octet-stream',
      'application/cloudevents+json',
    );
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 300 }), types, async (bytes, contentType) => {
        const raw = Buffer.from(bytes);
        const headers: Record<string, string> = contentType === undefined ? {} : { 'content-type': contentType };
        const body = await readBody(raw, contentType);
        // value is json parsed (forms and multipart fields are null-prototype objects, hence the round trip).
        assert.deepEqual(JSON.parse(body.json), JSON.parse(JSON.stringify(body.value ?? null)));
        const data = JSON.parse(
          captureDataJson({ method: 'POST', subPath: '', query: '', headers, body: raw, remoteIp: '::1' }, body, checkSignature(headers, raw, {}, 0)),
        );
        const back = data.raw.encoding === 'utf8' ? Buffer.from(data.raw.content, 'utf8') : Buffer.from(data.raw.content, 'base64');
        assert.ok(back.equals(raw));
      }),
      { numRuns: 300 },
    );
  });

  it("property: a JSON body keeps the sender's own text, so numbers keep every digit", async () => {
    await fc.assert(
      fc.asyncProperty(fc.json({ maxDepth: 5 }), async (text) => {
        const body = await readBody(Buffer.from(text), 'application/json');
        assert.equal(body.json, text);
        assert.deepEqual(body.value, JSON.parse(text));
      }),
      { numRuns: 300 },
    );
  });
});

describe('headersFromRaw and queryObject (captured request)', () => {
  it('property: a query string becomes an object whose values, in order, are the pairs sent', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.string({ minLength: 1, maxLength: 8 }), fc.string({ maxLength: 8 })), { maxLength: 20 }), (pairs) => {
        const q = queryObject(new URLSearchParams(pairs).toString());
        for (const key of new Set(pairs.map(([k]) => k))) {
          const sent = pairs.filter(([k]) => k === key).map(([, v]) => v);
          assert.deepEqual(q[key], sent.length === 1 ? sent[0] : sent);
        }
        assert.equal(Object.keys(q).length, new Set(pairs.map(([k]) => k)).size);
      }),
      { numRuns: 300 },
    );
  });

  it('joins a repeated header with ", " under its lower-case name, and a hostile name cannot reach the prototype', () => {
    const h = headersFromRaw(['Accept', 'a', 'ACCEPT', 'b', '__proto__', 'x', 'Empty', '']);
    assert.equal(h.accept, 'a, b');
    assert.equal(Object.getOwnPropertyDescriptor(h, '__proto__')?.value, 'x');
    assert.equal(h.empty, '');
    assert.equal(({} as Record<string, unknown>).x, undefined);
  });
});

describe('handshakeAnswer (provider URL checks)', () => {
  it('answers nothing for an ordinary request, and Slack only for a string challenge on POST', async () => {
    const json = async (v: unknown) => readBody(Buffer.from(JSON.stringify(v)), 'application/json');
    assert.equal(handshakeAnswer('POST', '', await json({ type: 'event_callback' })), null);
    assert.equal(handshakeAnswer('POST', '', await json({ type: 'url_verification', challenge: 7 })), null);
    assert.equal(handshakeAnswer('GET', '', await json({ type: 'url_verification', challenge: 'c' })), null);
    assert.equal(handshakeAnswer('GET', 'hub.mode=unsubscribe&hub.challenge=1', await json(null)), null);
    assert.deepEqual(handshakeAnswer('GET', 'hub.mode=subscribe&hub.challenge=a&hub.challenge=b', await json(null)), {
      contentType: 'text/plain; charset=utf-8',
      body: 'a',
    });
  });
});
