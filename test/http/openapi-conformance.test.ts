// The live service against its own /openapi.json: a realistic flow and every error status it can
// be made to answer, each response checked for a declared status, content type, body schema and
// headers (test/openapi-validator.ts). A generated client trusts exactly these declarations.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Addr, api, type Res, sleep } from '../helpers.js';
import { type InjectedService, startInjectedService } from '../inject.js';
import { OpenApiValidator } from '../openapi-validator.js';

const MCP_HEADERS = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };

describe('live responses conform to /openapi.json', () => {
  let svc: InjectedService;
  let limited: InjectedService;
  let v: OpenApiValidator;
  const seen = new Set<string>();

  /** One request, checked against the document; `status` is what the flow expects. */
  async function call(status: number, method: string, path: string, opts: Parameters<typeof api>[3] = {}, base = svc.baseUrl): Promise<Res> {
    const res = await api(base, method, path, opts);
    assert.equal(res.status, status, `${method} ${path}: ${res.text.slice(0, 300)}`);
    v.check(method, new URL(path, base).pathname, res);
    seen.add(String(res.status));
    return res;
  }

  before(async () => {
    svc = await startInjectedService({ MAX_EVENTS_PER_ADDRESS: '3', MAX_PAYLOAD_BYTES: '1024', DEFAULT_TTL_SECONDS: '1' });
    limited = await startInjectedService({ CREATE_RATE_LIMIT: '1' });
    v = new OpenApiValidator((await api(svc.baseUrl, 'GET', '/openapi.json')).json);
  });
  after(async () => {
    await svc?.stop();
    await limited?.stop();
  });

  it('the documents and probes', async () => {
    await call(200, 'GET', '/openapi.json');
    for (const p of ['/llms.txt', '/llms-full.txt']) {
      const r = await call(200, 'GET', p);
      assert.match(r.headers.get('content-type') ?? '', /^text\/plain/);
    }
    await call(200, 'GET', '/healthz');
    await call(200, 'GET', '/readyz');
    await call(400, 'GET', '/healthz?verbose=1');
  });

  it('create, get, list (with wait), deliver 202/200, ack, delete', async () => {
    await call(201, 'POST', '/api/v1/addresses');
    const created = await call(201, 'POST', '/api/v1/addresses', { json: { name: 'conformance', task_id: 't-1', expires_in_seconds: 3600 } });
    const a = toAddr(created.json);
    await call(200, 'GET', `/api/v1/addresses/${a.id}`, { token: a.token });
    await call(200, 'GET', `/api/v1/addresses/${a.id}/events`, { token: a.token });
    // A long-poll woken by a delivery, both answers checked.
    const waiting = call(200, 'GET', `/api/v1/addresses/${a.id}/events?after=0&wait=5&limit=10`, { token: a.token });
    await sleep(100);
    const first = await call(202, 'POST', a.inboxUrl, {
      json: { type: 'build.finished', data: { ok: true }, metadata: { build: '1' } },
      headers: { 'idempotency-key': 'k1' },
    });
    assert.equal(first.json.duplicate, false);
    assert.equal((await waiting).json.events[0].id, first.json.event.id);
    const again = await call(200, 'POST', a.inboxUrl, { json: {}, headers: { 'idempotency-key': 'k1' } });
    assert.equal(again.json.duplicate, true);
    const acked = await call(200, 'POST', `/api/v1/addresses/${a.id}/events/${first.json.event.id}/ack`, { token: a.token });
    assert.ok(acked.json.event.acknowledged_at);
    // An empty wait: held, then an empty page.
    await call(200, 'GET', `/api/v1/addresses/${a.id}/events?after=1&wait=1`, { token: a.token });
    // The capture URL and its signing secrets.
    const hook: string = created.json.endpoints.hook_url;
    await call(200, 'PUT', `/api/v1/addresses/${a.id}/signing-secrets`, { token: a.token, json: { github: 'webhook-secret' } });
    const captured = await call(202, 'POST', hook, { json: { action: 'opened' }, headers: { 'x-github-event': 'pull_request' } });
    assert.equal(captured.json.duplicate, false);
    await call(202, 'PUT', hook, { body: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    await call(404, 'POST', `${hook}x`, { json: {} });
    await call(204, 'DELETE', `/api/v1/addresses/${a.id}`, { token: a.token });
    await call(404, 'GET', `/api/v1/addresses/${a.id}`, { token: a.token });
  });

  it('every error a caller can provoke: 400, 401, 404, 405, 409, 410, 413, 415, 429', async () => {
    const a = toAddr((await call(201, 'POST', '/api/v1/addresses', { json: { expires_in_seconds: 3600 } })).json);
    const events = `/api/v1/addresses/${a.id}/events`;
    // 400
    await call(400, 'POST', '/api/v1/addresses', { json: { nickname: 'x' } });
    await call(400, 'POST', '/api/v1/addresses', { body: '{"name":', headers: { 'content-type': 'application/json' } });
    await call(400, 'GET', `${events}?limit=0`, { token: a.token });
    await call(400, 'GET', `${events}?cursor=1`, { token: a.token });
    await call(400, 'POST', a.inboxUrl, { json: { type: 1 } });
    await call(400, 'POST', `${events}/evt_00000000000000000000000000/ack`, { token: a.token, body: '{', headers: { 'content-type': 'application/json' } });
    await call(400, 'DELETE', `/api/v1/addresses/${a.id}`, { token: a.token, body: '{', headers: { 'content-type': 'application/json' } });
    // 401, with its challenge
    const missing = await call(401, 'GET', `/api/v1/addresses/${a.id}`);
    assert.equal(missing.headers.get('www-authenticate'), 'Bearer realm="return-address"');
    const wrong = await call(401, 'GET', events, { token: 'aa_read_not-a-token' });
    assert.equal(wrong.headers.get('www-authenticate'), 'Bearer realm="return-address", error="invalid_token"');
    const other = toAddr((await call(201, 'POST', '/api/v1/addresses')).json);
    const foreign = await call(401, 'POST', `${events}/evt_00000000000000000000000000/ack`, { token: other.token });
    assert.match(foreign.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
    await call(401, 'DELETE', `/api/v1/addresses/${a.id}`, { token: other.token });
    await call(401, 'POST', a.mcpUrl, { json: { jsonrpc: '2.0', id: 1, method: 'ping' }, headers: MCP_HEADERS });
    // 404, also for ids of any length (the router's parameter limit is above any URL Node accepts)
    await call(404, 'GET', '/api/v1/addresses/addr_00000000000000000000000000', { token: a.token });
    await call(404, 'GET', `/api/v1/addresses/addr_${'a'.repeat(600)}`, { token: a.token });
    await call(404, 'GET', `/api/v1/addresses/addr_${'a'.repeat(600)}/events`, { token: a.token });
    await call(404, 'POST', `/api/v1/inbox/addr_${'a'.repeat(600)}/aa_ingress_${'b'.repeat(2000)}`, { json: {} });
    await call(404, 'POST', `${a.inboxUrl}x`, { json: {} });
    await call(404, 'POST', `${events}/evt_00000000000000000000000000/ack`, { token: a.token });
    await call(404, 'POST', `${events}/${'e'.repeat(700)}/ack`, { token: a.token });
    // 405: the Allow header lists HEAD wherever GET is
    const put = await call(405, 'PUT', '/api/v1/addresses');
    assert.equal(put.headers.get('allow'), 'POST');
    const post = await call(405, 'POST', '/healthz');
    assert.equal(post.headers.get('allow'), 'GET, HEAD');
    const patch = await call(405, 'PATCH', `/api/v1/addresses/${a.id}`, { token: a.token });
    assert.equal(patch.headers.get('allow'), 'GET, HEAD, DELETE');
    for (const method of ['GET', 'DELETE']) {
      const r = await call(405, method, a.mcpUrl, { token: a.token, headers: { accept: 'text/event-stream' } });
      assert.equal(r.headers.get('allow'), 'POST');
    }
    // 409
    await call(409, 'POST', a.inboxUrl, { json: { dedupe_key: 'one' }, headers: { 'idempotency-key': 'two' } });
    // 413 (MAX_PAYLOAD_BYTES is 1024 here)
    const big = { data: 'x'.repeat(2000) };
    await call(413, 'POST', a.inboxUrl, { json: big });
    await call(413, 'POST', '/api/v1/addresses', { json: { name: 'x'.repeat(2000) } });
    await call(413, 'POST', `${events}/evt_00000000000000000000000000/ack`, { token: a.token, json: big });
    // 415
    const text = { body: 'hello', headers: { 'content-type': 'text/plain' } };
    await call(415, 'POST', a.inboxUrl, text);
    await call(415, 'POST', '/api/v1/addresses', text);
    await call(415, 'POST', `${events}/evt_00000000000000000000000000/ack`, { token: a.token, ...text });
    await call(415, 'DELETE', `/api/v1/addresses/${a.id}`, { token: a.token, ...text });
    // 429 queue_full (MAX_EVENTS_PER_ADDRESS is 3, none acknowledged), with Retry-After
    for (let i = 0; i < 3; i++) await call(202, 'POST', a.inboxUrl, { json: { data: i } });
    const full = await call(429, 'POST', a.inboxUrl, { json: {} });
    assert.equal(full.json.error.code, 'queue_full');
    // 429 rate_limited on a service allowing one creation per window
    await call(201, 'POST', '/api/v1/addresses', {}, limited.baseUrl);
    const limitedRes = await call(429, 'POST', '/api/v1/addresses', {}, limited.baseUrl);
    assert.equal(limitedRes.json.error.code, 'rate_limited');
    // 410: DEFAULT_TTL_SECONDS is 1 here
    const short = toAddr((await call(201, 'POST', '/api/v1/addresses')).json);
    await sleep(1200);
    await call(410, 'POST', short.inboxUrl, { json: {} });
    for (const s of ['400', '401', '404', '405', '409', '410', '413', '415', '429']) assert.ok(seen.has(s), `status ${s} provoked`);
  });

  it('MCP: a call, a notification, and the JSON-RPC and API errors of its 400', async () => {
    const a = toAddr((await call(201, 'POST', '/api/v1/addresses')).json);
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '0' } },
    };
    await call(200, 'POST', a.mcpUrl, { token: a.token, json: init, headers: MCP_HEADERS });
    await call(200, 'POST', a.mcpUrl, {
      token: a.token,
      json: { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'list_events', arguments: {} } },
      headers: MCP_HEADERS,
    });
    await call(202, 'POST', a.mcpUrl, { token: a.token, json: { jsonrpc: '2.0', method: 'notifications/initialized' }, headers: MCP_HEADERS });
    const empty = await call(400, 'POST', a.mcpUrl, { token: a.token, json: [], headers: MCP_HEADERS });
    assert.deepEqual([empty.json.id, empty.json.error.code], [null, -32600]);
    await call(400, 'POST', a.mcpUrl, { token: a.token, json: { jsonrpc: '2.0', id: null, method: 'ping' }, headers: MCP_HEADERS });
    const accept = await call(400, 'POST', a.mcpUrl, { token: a.token, json: init, headers: { 'content-type': 'application/json' } });
    assert.equal(accept.json.error.code, 'invalid_request');
    const query = await call(400, 'POST', `${a.mcpUrl}?session=1`, { token: a.token, json: init, headers: MCP_HEADERS });
    assert.match(query.json.error.message, /Unknown query parameter 'session'/);
    const params = await call(200, 'POST', a.mcpUrl, {
      token: a.token,
      json: { jsonrpc: '2.0', id: 3, method: 'tools/call', params: {} },
      headers: MCP_HEADERS,
    });
    assert.equal(params.json.error.code, -32602);
  });
});

function toAddr(b: any): Addr {
  const inboxUrl: string = b.endpoints.inbox_url;
  return {
    id: b.address.id,
    token: b.credentials.read_token,
    inboxUrl,
    secret: inboxUrl.slice(inboxUrl.lastIndexOf('/') + 1),
    eventsUrl: b.endpoints.events_url,
    mcpUrl: b.endpoints.mcp_url,
    email: b.address.email,
    slug: b.address.slug,
    body: b,
  };
}
