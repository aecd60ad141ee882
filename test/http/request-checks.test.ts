// Every bad request is answered the same way on either store, naming what is wrong: malformed JSON is invalid_json everywhere, cursors up to
// Number.MAX_SAFE_INTEGER, credentials checked before anything else (inbox secret before body and
// headers; bearer before an undecodable or over-long id), 400s that name the field and the fix,
// unknown query parameters refused, three distinct 401s: route contracts, answered through inject
// (test/inject.ts). Over a real socket: header faults only raw bytes can carry, 413s a client that
// writes its whole body reads, and a socket closed past MAX_DISCARD_BYTES.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { api, createAddress, listEvents, type Res, startTestService, type TestService } from '../helpers.js';
import { type InjectedService, startInjectedService } from '../inject.js';

function assertError(r: Res, status: number, code: string): string {
  assert.equal(r.status, status, r.text);
  assert.equal(r.json?.error?.code, code, r.text);
  return r.json.error.message as string;
}

const JSON_HEADERS = { 'content-type': 'application/json' };
const LIMIT = 256 * 1024;

/**
 * A plain node:http client that writes the whole body before it cares about the answer: it resolves
 * once the body is written and the answer read, or with the first socket error (EPIPE, ECONNRESET).
 */
function postWholeBody(url: string, body: Buffer, contentType: string): Promise<{ status?: number; connection?: string; text?: string; error?: string }> {
  return new Promise((resolve) => {
    const u = new URL(url);
    let answer: { status?: number; connection?: string; text?: string } | undefined;
    let written = false;
    const finish = () => {
      if (answer && written) resolve(answer);
    };
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        agent: false,
        headers: { 'content-type': contentType, 'content-length': body.length },
      },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => {
          text += d.toString();
        });
        res.on('end', () => {
          answer = { status: res.statusCode, connection: res.headers.connection, text };
          finish();
        });
      },
    );
    req.on('error', (e: NodeJS.ErrnoException) => resolve({ ...answer, error: e.code ?? e.message }));
    req.end(body, () => {
      written = true;
      finish();
    });
  });
}

/**
 * Headers then a body of `size` bytes on a raw socket, written to the end unless the socket fails;
 * resolves with what came back and the first socket error.
 */
function rawUpload(port: number, head: string, size: number): Promise<{ answer: string; error?: string }> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let answer = '';
    let error: string | undefined;
    s.on('data', (d: Buffer) => {
      answer += d.toString('latin1');
    });
    s.on('error', (e: NodeJS.ErrnoException) => {
      error ??= e.code;
    });
    s.on('close', () => resolve({ answer, error }));
    s.write(head);
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    let left = size;
    const pump = () => {
      while (left > 0) {
        left -= chunk.length;
        if (!s.write(chunk)) return void s.once('drain', pump);
      }
      s.end();
    };
    pump();
  });
}

/** Raw bytes on a socket; resolves with the status line and the body of the answer. */
function rawRequest(port: number, request: string): Promise<{ statusLine: string; body: string }> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => s.end(Buffer.from(request, 'latin1')));
    let out = '';
    s.on('data', (d: Buffer) => {
      out += d.toString('latin1');
    });
    s.on('error', reject);
    s.on('close', () => resolve({ statusLine: out.split('\r\n')[0] ?? '', body: out.slice(out.indexOf('\r\n\r\n') + 4) }));
  });
}

const ENV = { MAX_PAYLOAD_BYTES: String(LIMIT), MAX_DISCARD_BYTES: String(16 * 1024 * 1024) };

describe('order of checks, error codes and messages: the routes', () => {
  let svc: InjectedService;
  let base: string;
  before(async () => {
    svc = await startInjectedService(ENV);
    base = svc.baseUrl;
  });
  after(() => svc.stop());

  it('POST /addresses, the inbox and /mcp: malformed JSON is invalid_json, even when it also nests too deep', async () => {
    const a = await createAddress(base);
    const deepAndBroken = `{"data":${'['.repeat(100)}`;
    const targets: [string, string, Record<string, string>][] = [
      ['POST', '/api/v1/addresses', {}],
      ['POST', a.inboxUrl, {}],
      ['POST', `/api/v1/addresses/${a.id}/mcp`, { authorization: `Bearer ${a.token}`, accept: 'application/json, text/event-stream' }],
    ];
    for (const [method, path, headers] of targets) {
      for (const body of ['{"name":', deepAndBroken, '{"a":1,}']) {
        const msg = assertError(await api(base, method, path, { body, headers: { ...JSON_HEADERS, ...headers } }), 400, 'invalid_json');
        assert.match(msg, /JSON/);
      }
    }
    // Well-formed but too deep stays invalid_request.
    assertError(await api(base, 'POST', a.inboxUrl, { body: `{"data":${'['.repeat(100)}${']'.repeat(100)}}`, headers: JSON_HEADERS }), 400, 'invalid_request');
    assert.equal((await listEvents(base, a)).json.events.length, 0);
  });

  it('GET /events: after accepts every integer up to Number.MAX_SAFE_INTEGER; a larger one is a 400 that says the range', async () => {
    const a = await createAddress(base);
    const ok = await listEvents(base, a, { after: '9007199254740991' });
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(ok.json, { events: [], next_cursor: 9007199254740991, has_more: false });
    assert.equal((await listEvents(base, a, { after: '1000000000000000' })).status, 200);
    for (const v of ['9007199254740992', '99999999999999999999']) {
      const msg = assertError(await listEvents(base, a, { after: v }), 400, 'invalid_request');
      assert.match(msg, /'after'.*9007199254740991/);
    }
  });

  it('POST /inbox/{id}/{secret}: address and secret are checked before the body and the headers', async () => {
    const a = await createAddress(base);
    const b = await createAddress(base);
    const nest = `{"data":${'['.repeat(70)}${']'.repeat(70)}}`;
    const bad: [string, Record<string, string>][] = [
      [nest, JSON_HEADERS],
      ['{"type":"a\\u0000"}', JSON_HEADERS],
      ['{}', { ...JSON_HEADERS, 'idempotency-key': '' }],
      ['{"name":', JSON_HEADERS],
      ['x', { 'content-type': 'text/plain' }],
      ['{"bogus":1}', JSON_HEADERS],
    ];
    const unknownAddress = `${base}/api/v1/inbox/addr_${'0'.repeat(26)}/${a.secret}`;
    const wrongSecret = `${base}/api/v1/inbox/${a.id}/${b.secret}`;
    for (const [body, headers] of bad) {
      for (const url of [unknownAddress, wrongSecret]) {
        assert.equal(assertError(await api(base, 'POST', url, { body, headers }), 404, 'not_found'), 'No inbox at this URL.');
      }
      // With the right secret, the same request is refused for what it is.
      assert.ok([400, 415].includes((await api(base, 'POST', a.inboxUrl, { body, headers })).status));
    }
    assert.equal((await listEvents(base, a)).json.events.length, 0);
  });

  it('bearer routes (/events, /events/{id}/ack): bearer before address before token before the rest, also for undecodable and over-long ids', async () => {
    const a = await createAddress(base);
    const b = await createAddress(base);
    const longId = 'e'.repeat(600);
    for (const path of [`/api/v1/addresses/${a.id}/events/%ff/ack`, `/api/v1/addresses/${a.id}/events/${longId}/ack`]) {
      assertError(await api(base, 'POST', path), 401, 'unauthorized');
      assertError(await api(base, 'POST', path, { headers: { authorization: 'Bearer bad' } }), 401, 'unauthorized');
      assertError(await api(base, 'POST', path, { token: b.token }), 401, 'unauthorized');
      assertError(await api(base, 'POST', path, { token: a.token }), 404, 'not_found');
    }
    assertError(await api(base, 'GET', '/api/v1/addresses/%ff/events'), 401, 'unauthorized');
    assertError(await api(base, 'GET', '/api/v1/addresses/%ff/events', { token: a.token }), 404, 'not_found');
    assertError(await api(base, 'GET', `/api/v1/addresses/${a.id}/events?limit=0`), 401, 'unauthorized');
    assertError(await api(base, 'GET', `/api/v1/addresses/${a.id}/events?cursor=1`, { token: b.token }), 401, 'unauthorized');
    assertError(await api(base, 'GET', '/%ff'), 404, 'not_found');
  });

  it('GET /events and the inbox: every 400 names the field or header and the fix', async () => {
    const a = await createAddress(base);
    const cases: [Res, RegExp][] = [
      [await listEvents(base, a, { limit: '0' }), /'limit'.*from 1 to 100/],
      [await api(base, 'GET', `/api/v1/addresses/${a.id}/events?limit=1&limit=2`, { token: a.token }), /'limit'.*more than once/],
      [await api(base, 'POST', a.inboxUrl, { body: '{"type":"a\\u0000"}', headers: JSON_HEADERS }), /'type'.*U\+0000/],
      [await api(base, 'POST', a.inboxUrl, { body: '{}', headers: { ...JSON_HEADERS, 'idempotency-key': '' } }), /Idempotency-Key.*1-255 characters/],
      [await api(base, 'POST', a.inboxUrl, { body: '[]', headers: JSON_HEADERS }), /body must be a JSON object/],
    ];
    for (const [r, re] of cases) assert.match(assertError(r, 400, 'invalid_request'), re);
  });

  it('every route: unknown query parameters are 400 invalid_request naming the parameter and the allowed ones', async () => {
    const a = await createAddress(base);
    const ev = (await api(base, 'POST', a.inboxUrl, { json: {} })).json.event;
    assert.match(assertError(await listEvents(base, a, { cursor: 2 }), 400, 'invalid_request'), /'cursor'.*after, limit, wait/);
    assert.match(assertError(await listEvents(base, a, { after: 0, Limit: 5 }), 400, 'invalid_request'), /'Limit'/);
    const auth = { authorization: `Bearer ${a.token}` };
    const routes: [string, string, Record<string, string>, string?][] = [
      ['POST', '/api/v1/addresses', JSON_HEADERS, '{}'],
      ['GET', `/api/v1/addresses/${a.id}`, auth],
      ['POST', `/api/v1/addresses/${a.id}/events/${ev.id}/ack`, auth],
      ['POST', a.inboxUrl.slice(base.length), JSON_HEADERS, '{}'],
      [
        'POST',
        `/api/v1/addresses/${a.id}/mcp`,
        { ...auth, ...JSON_HEADERS, accept: 'application/json, text/event-stream' },
        '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
      ],
      ['GET', '/healthz', {}],
      ['GET', '/openapi.json', {}],
      ['DELETE', `/api/v1/addresses/${a.id}`, auth],
    ];
    for (const [method, path, headers, body] of routes) {
      const msg = assertError(await api(base, method, `${path}?dry_run=1`, { headers, body }), 400, 'invalid_request');
      assert.match(msg, /'dry_run'.*no query parameters/);
    }
    // Nothing was done by the refused requests.
    assert.equal((await listEvents(base, a)).json.events.length, 1);
    assert.equal((await api(base, 'GET', `/api/v1/addresses/${a.id}`, { token: a.token })).status, 200);
  });

  it('GET /events: the three 401s say which case it is, the same whether or not the address exists', async () => {
    const a = await createAddress(base);
    const b = await createAddress(base);
    const missing = `/api/v1/addresses/addr_${'0'.repeat(26)}/events`;
    const mine = `/api/v1/addresses/${a.id}/events`;
    const none = [assertError(await api(base, 'GET', mine), 401, 'unauthorized'), assertError(await api(base, 'GET', missing), 401, 'unauthorized')];
    const malformed = [
      assertError(await api(base, 'GET', mine, { headers: { authorization: `Basic ${a.token}` } }), 401, 'unauthorized'),
      assertError(await api(base, 'GET', missing, { headers: { authorization: 'Bearer nope' } }), 401, 'unauthorized'),
    ];
    const wrong = assertError(await api(base, 'GET', mine, { token: b.token }), 401, 'unauthorized');
    assert.equal(none[0], none[1]);
    assert.equal(malformed[0], malformed[1]);
    assert.match(none[0]!, /No Authorization header/);
    assert.match(malformed[0]!, /not a bearer read token/);
    assert.match(wrong, /does not open this address/);
    assert.equal(new Set([none[0], malformed[0], wrong]).size, 3);
    // A well-formed token on an unknown address is still 404 (design.md, "Errors"), not the third 401.
    assertError(await api(base, 'GET', missing, { token: a.token }), 404, 'not_found');
  });
});

describe('order of checks, error codes and messages: over a socket', () => {
  let svc: TestService;
  let base: string;
  let port: number;
  before(async () => {
    svc = await startTestService(ENV);
    base = svc.baseUrl;
    port = Number(new URL(base).port);
  });
  after(() => svc.stop());

  it('header faults only raw bytes carry (a control character in Authorization, two Content-Lengths, Content-Length beside chunked, a short body, no Host): 400 naming the header', async () => {
    const a = await createAddress(base);
    const ack = `/api/v1/addresses/${a.id}/events/evt_${'0'.repeat(26)}/ack`;
    const raw: [string, RegExp][] = [
      [`POST ${ack} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \x01${a.token}\r\n\r\n`, /Authorization header holds a character/],
      [
        `POST ${a.inboxUrl.slice(base.length)} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}`,
        /Content-Length/,
      ],
      [
        `POST ${a.inboxUrl.slice(base.length)} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`,
        /Transfer-Encoding/,
      ],
      [`POST ${a.inboxUrl.slice(base.length)} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 3\r\n\r\n{}`, /Content-Length/],
      [`GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n`, /Host header is missing/],
    ];
    for (const [request, re] of raw) {
      const r = await rawRequest(port, request);
      assert.match(r.statusLine, / 400 /, r.body);
      const body = JSON.parse(r.body);
      assert.equal(body.error.code, 'invalid_request');
      assert.match(body.error.message, re);
    }
  });

  it('413 (and any early answer) reaches a client that writes its whole body; the connection then closes', async () => {
    const a = await createAddress(base);
    const big = Buffer.alloc(8 * 1024 * 1024, 0x61);
    const cases: [string, string, number][] = [
      [`${base}/api/v1/addresses`, 'application/json', 413],
      [a.inboxUrl, 'application/json', 413],
      [`${base}/api/v1/addresses/${a.id}/events/evt_${'0'.repeat(26)}/ack`, 'application/json', 401],
      [a.inboxUrl, 'multipart/form-data; boundary=x', 415],
      [`${base}/api/v1/inbox/${a.id}/aa_ingress_${'x'.repeat(43)}`, 'application/json', 404],
    ];
    for (const [url, type, status] of cases) {
      const r = await postWholeBody(url, big, type);
      assert.equal(r.error, undefined, `${url}: the client saw ${r.error} instead of the answer`);
      assert.equal(r.status, status, r.text);
      assert.equal(r.connection, 'close');
      if (status === 413) assert.match(JSON.parse(r.text ?? '').error.message, new RegExp(`MAX_PAYLOAD_BYTES = ${LIMIT}`));
    }
    // A raw socket that writes all 8 MiB, then reads: it gets the whole answer and a clean end.
    const head = `POST ${a.inboxUrl.slice(base.length)} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${big.length}\r\n\r\n`;
    const raw = await rawUpload(port, head, big.length);
    assert.equal(raw.error, undefined);
    assert.match(raw.answer, /^HTTP\/1.1 413 [\s\S]*connection: close[\s\S]*"payload_too_large"/i);
    assert.equal((await listEvents(base, a)).json.events.length, 0);
    assert.equal((await api(base, 'GET', '/healthz')).status, 200);
  });
});

describe('past MAX_DISCARD_BYTES the socket is closed', () => {
  it('a body far over the bound is not read to its end', async () => {
    const svc = await startTestService({ MAX_PAYLOAD_BYTES: String(LIMIT), MAX_DISCARD_BYTES: '0' });
    try {
      const a = await createAddress(svc.baseUrl);
      const size = 256 * 1024 * 1024;
      const head = `POST ${a.inboxUrl.slice(svc.baseUrl.length)} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${size}\r\n\r\n`;
      // The server stops reading right after its answer: the writer sees the socket reset long before 256 MiB.
      const r = await rawUpload(Number(new URL(svc.baseUrl).port), head, size);
      assert.ok(r.error === 'ECONNRESET' || r.error === 'EPIPE', JSON.stringify(r));
      assert.equal((await api(svc.baseUrl, 'GET', '/healthz')).status, 200);
    } finally {
      await svc.stop();
    }
  });
});
