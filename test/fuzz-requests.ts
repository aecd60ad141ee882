// fast-check generators of hostile HTTP requests against every endpoint, and the one property
// every answer must have: a documented status, never 5xx, errors in the documented shape.
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';

export interface RawRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
}

export interface Target {
  /** A port to send to over a socket, or an app (test/inject.ts) to answer through `inject`. */
  port: number | FastifyInstance;
  addressId: string;
  token: string;
  secret: string;
  eventId: string;
}

const DOCUMENTED = new Set([200, 201, 202, 204, 400, 401, 404, 405, 408, 409, 410, 413, 415, 429, 431]);
const agent = new Agent({ keepAlive: true, maxSockets: 8 });

const segment = fc.oneof(
  fc.constantFrom('..', '%2e%2e', '.', '%00', '%ZZ', '%E0%A4%A', '%F0%9F%98%80', 'addr_', 'evt_', '~', '%2F', 'a%20b', ''),
  fc.string({ maxLength: 30 }).map(encodeURIComponent),
  fc.stringMatching(/^[a-z0-9_]{0,40}$/),
);

const jsonValue = fc.jsonValue({ maxDepth: 6 });
const deep = fc.integer({ min: 60, max: 3000 }).map((n) => `{"data":${'['.repeat(n)}${']'.repeat(n)}}`);
const bodyText = fc.oneof(
  jsonValue.map((v) => JSON.stringify(v)),
  fc
    .record(
      {
        type: fc.oneof(fc.string(), fc.integer()),
        source: fc.string(),
        data: jsonValue,
        metadata: fc.dictionary(fc.string(), fc.oneof(fc.string(), fc.integer())),
        dedupe_key: fc.string({ maxLength: 300 }),
      },
      { requiredKeys: [] },
    )
    .map((v) => JSON.stringify(v)),
  fc
    .record(
      {
        name: fc.oneof(fc.string({ maxLength: 120 }), fc.integer()),
        task_id: fc.string({ maxLength: 220 }),
        expires_in_seconds: fc.oneof(fc.integer(), fc.double()),
      },
      { requiredKeys: [] },
    )
    .map((v) => JSON.stringify(v)),
  deep,
  fc.string({ maxLength: 200 }),
  fc.constantFrom(
    '',
    '{',
    '{"data":"\u0000"}',
    '{"type":"a\\u0000b"}',
    '{"source":"\\u0000"}',
    '{"dedupe_key":"k\\u0000"}',
    '{"name":"\\u0000","task_id":"\\u0000"}',
    '{"metadata":{"\\u0000":"\\u0000"}}',
    '{"__proto__":{"x":1}}',
    '{"data":1,"data":2}',
    'null',
    '\ufeff{}',
  ),
  fc.integer({ min: 1, max: 1_300_000 }).map((n) => `{"data":"${'x'.repeat(n)}"}`),
);
const body = fc.oneof(
  bodyText.map((t) => Buffer.from(t, 'utf8')),
  fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)), // invalid UTF-8 and NUL bytes
  fc.constant(undefined),
);
const contentType = fc.constantFrom(
  undefined,
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=latin1',
  ';;',
  'application/',
  '*/*',
);
const queryValue = fc.oneof(
  fc.integer().map(String),
  fc.double().map(String),
  fc.string({ maxLength: 20 }),
  fc.constantFrom('', '0x10', '1e3', '-0', '25', '26', '100', '9007199254740993'),
);
const query = fc.dictionary(fc.constantFrom('after', 'limit', 'wait', 'x', 'after[]'), queryValue, { maxKeys: 3 }).map((q) =>
  Object.entries(q)
    .map(([k, v]) => `${k}=${encodeURIComponent(v)}`)
    .join('&'),
);

export function requestArb(t: Target): fc.Arbitrary<RawRequest> {
  const path = fc.oneof(
    fc.constant('/api/v1/addresses'),
    fc.constantFrom(
      `/api/v1/addresses/${t.addressId}`,
      `/api/v1/addresses/${t.addressId}/events`,
      `/api/v1/addresses/${t.addressId}/events/${t.eventId}/ack`,
      `/api/v1/inbox/${t.addressId}/${t.secret}`,
      `/api/v1/addresses/${t.addressId}/mcp`,
      '/healthz',
      '/openapi.json',
    ),
    fc
      .tuple(fc.constantFrom('/api/v1/addresses/', '/api/v1/inbox/', `/api/v1/inbox/${t.addressId}/`, '/api/v1/', '/'), segment, fc.option(segment))
      .map(([p, a, b]) => `${p}${a}${b === null ? '' : `/${b}`}`),
  );
  const auth = fc.constantFrom(
    undefined,
    `Bearer ${t.token}`,
    'Bearer',
    `Bearer ${t.secret}`,
    `bearer  ${t.token}`,
    'Basic Zm9vOmJhcg==',
    `Bearer ${t.token}\u0000`.replace('\u0000', ''),
    'x'.repeat(500),
  );
  return fc
    .record({
      method: fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'PATCH', 'HEAD', 'OPTIONS'),
      path: fc.tuple(path, query).map(([p, q]) => (q ? `${p}?${q}` : p)),
      ct: contentType,
      auth,
      key: fc.option(
        fc.oneof(
          fc.string({ maxLength: 300 }).filter((s) => /^[\x20-\x7e]*$/.test(s)),
          fc.constant(''),
        ),
      ),
      body,
    })
    .map(({ method, path: p, ct, auth: au, key, body: b }) => {
      const headers: Record<string, string> = {};
      if (ct !== undefined) headers['content-type'] = ct;
      if (au !== undefined) headers.authorization = au;
      if (key !== null) headers['idempotency-key'] = key;
      const sent = method === 'GET' || method === 'HEAD' ? undefined : b;
      // Framed, as HTTP requires (Node sends an OPTIONS or DELETE body unframed otherwise, which is
      // a broken request of the client's making, not something to judge the server by).
      if (sent !== undefined) headers['content-length'] = String(sent.length);
      return { method, path: p, headers, body: sent };
    });
}

export function send(port: number, r: RawRequest): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: r.method, path: r.path, headers: r.headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(30_000, () => req.destroy(new Error('no answer within 30 s')));
    req.end(r.body);
  });
}

/** The same request through Fastify's inject: the app's answer without a socket (no reset can happen there). */
export async function sendInjected(
  app: FastifyInstance,
  r: RawRequest,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  const res = await app.inject({
    method: r.method as 'GET',
    url: r.path,
    headers: { host: 'fuzz.test', ...r.headers },
    ...(r.body === undefined ? {} : { payload: r.body }),
  });
  return { status: res.statusCode, headers: res.headers as Record<string, string | string[] | undefined>, text: res.body };
}

/** The property: a documented status, never 5xx, errors in the documented shape. */
export async function checkAnswer(to: number | FastifyInstance, r: RawRequest): Promise<void> {
  const res = typeof to === 'number' ? await send(to, r) : await sendInjected(to, r);
  const what = `${r.method} ${r.path.slice(0, 120)} ct=${r.headers['content-type']} -> ${res.status} ${res.text.slice(0, 200)}`;
  assert.ok(DOCUMENTED.has(res.status), `undocumented status: ${what}`);
  if (res.status >= 400 && r.method !== 'HEAD') {
    assert.match(String(res.headers['content-type']), /^application\/json/, what);
    const j = JSON.parse(res.text) as { error?: { code?: unknown; message?: unknown } };
    assert.equal(typeof j.error?.code, 'string', what);
    assert.equal(typeof j.error?.message, 'string', what);
    assert.doesNotMatch(res.text, /\n\s+at /, 'no stack trace');
  }
}

export function closeAgent(): void {
  agent.destroy();
}
