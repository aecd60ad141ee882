// The MCP endpoint (design.md, "MCP") through the SDK's own client over real HTTP: every tool
// against the HTTP API's answers, waits woken by deliveries, tool errors as isError results,
// authentication, and the stateless transport's edges (405, batches, the API's error shape).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { UNTRUSTED_CONTENT } from '../../src/domain/trust.js';
import { type Addr, api, createAddress, deliver, listEvents, type Res, sleep, startTestService, type TestService } from '../helpers.js';

const MCP_HEADERS = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };

async function connect(url: string, token: string | undefined): Promise<Client> {
  const client = new Client({ name: 'return-address-test', version: '0.0.0' });
  const headers: Record<string, string> = token === undefined ? {} : { Authorization: `Bearer ${token}` };
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

/** tools/call; the result must be a success whose JSON text and structuredContent agree. */
async function callOk(client: Client, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
  assert.notEqual(r.isError, true, `${name} failed: ${JSON.stringify(r.content)}`);
  const text = r.content.find((c) => c.type === 'text');
  assert.ok(text && text.type === 'text', `${name} has a text rendering`);
  assert.deepEqual(JSON.parse(text.text), r.structuredContent, `${name}: text and structuredContent carry the same JSON`);
  return r.structuredContent;
}

/** tools/call that must come back as a tool error (isError), not a protocol error; returns its text. */
async function callError(client: Client, name: string, args: Record<string, unknown>): Promise<string> {
  const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
  assert.equal(r.isError, true, `${name}(${JSON.stringify(args)}) should be a tool error: ${JSON.stringify(r).slice(0, 300)}`);
  const text = r.content.find((c) => c.type === 'text');
  assert.ok(text && text.type === 'text');
  return text.text;
}

/** A JSON-RPC 2.0 error response (not the API's error body). */
function assertJsonRpcError(r: Res, status: number, id: string | number | null, code: number): void {
  assert.equal(r.status, status, r.text);
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
  assert.deepEqual(Object.keys(r.json ?? {}).sort(), ['error', 'id', 'jsonrpc'], r.text);
  assert.equal(r.json.jsonrpc, '2.0');
  assert.equal(r.json.id, id, r.text);
  assert.equal(r.json.error.code, code, r.text);
  assert.equal(typeof r.json.error.message, 'string');
}

function assertError(r: Res, status: number, code: string): void {
  assert.equal(r.status, status, r.text);
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
  assert.deepEqual(Object.keys(r.json ?? {}), ['error'], r.text);
  assert.equal(r.json.error.code, code, r.text);
  assert.equal(typeof r.json.error.message, 'string');
}

/** A raw JSON-RPC POST; `token: null` sends no Authorization header. */
function rpc(base: string, a: Addr, body: unknown, headers: Record<string, string> = MCP_HEADERS, token: string | null = a.token): Promise<Res> {
  return api(base, 'POST', a.mcpUrl, { body: JSON.stringify(body), headers, ...(token === null ? {} : { token }) });
}

async function deliverOk(base: string, a: Addr, json: unknown): Promise<any> {
  const r = await deliver(base, a, json);
  assert.equal(r.status, 202, r.text);
  return r.json.event;
}

describe('MCP endpoint', () => {
  let svc: TestService;
  let base: string;
  const clients: Client[] = [];
  const session = async (a: Addr) => {
    const c = await connect(a.mcpUrl, a.token);
    clients.push(c);
    return c;
  };
  before(async () => {
    svc = await startTestService();
    base = svc.baseUrl;
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await svc.stop();
  });

  it('initializes statelessly: server info, tools capability, instructions, no session id', async () => {
    const a = await createAddress(base);
    const c = await session(a);
    assert.equal(c.getServerVersion()?.name, 'return-address');
    assert.ok(c.getServerCapabilities()?.tools, 'offers tools');
    assert.match(c.getInstructions() ?? '', /next_cursor/);
    assert.ok((c.getInstructions() ?? '').includes(UNTRUSTED_CONTENT), 'the instructions say event content is data');
    const init = await rpc(base, a, {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
    });
    assert.equal(init.status, 200, init.text);
    assert.equal(init.headers.get('mcp-session-id'), null, 'stateless: no session id');
    assert.equal(init.json.result.protocolVersion, '2025-06-18');
    // Stateless, one server per request, fixed tools: it never sends notifications/tools/list_changed.
    assert.equal(init.json.result.capabilities.tools.listChanged, false, init.text);
  });

  it('lists the tools with descriptions and input schemas carrying the HTTP ranges', async () => {
    const c = await session(await createAddress(base));
    const { tools } = await c.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    assert.deepEqual(Object.keys(byName).sort(), [
      'ack_event',
      'claim_events',
      'get_address',
      'get_approval',
      'get_sender_policy',
      'list_events',
      'release_event',
      'request_approval',
      'set_sender_policy',
      'settle_claim',
      'wait_for_event',
    ]);
    for (const t of tools) {
      assert.ok((t.description ?? '').length > 40, `${t.name} has a description an agent can act on`);
      assert.equal(t.inputSchema.type, 'object');
      assert.equal(t.outputSchema?.type, 'object', `${t.name} declares its output shape`);
    }
    const props = (n: string) => byName[n]!.inputSchema.properties as Record<string, Record<string, unknown>>;
    assert.deepEqual(props('get_address'), {});
    const le = props('list_events');
    assert.deepEqual(Object.keys(le).sort(), ['after', 'consumer', 'limit', 'match', 'state', 'type', 'wait']);
    // No default: without after, a consumer's stored position decides (0 without a consumer).
    assert.deepEqual([le.after!.type, le.after!.minimum, le.after!.default], ['integer', 0, undefined]);
    assert.deepEqual([le.limit!.type, le.limit!.minimum, le.limit!.maximum, le.limit!.default], ['integer', 1, 100, 50]);
    assert.deepEqual([le.wait!.type, le.wait!.minimum, le.wait!.maximum, le.wait!.default], ['integer', 0, 25, 0]);
    assert.deepEqual(byName.ack_event!.inputSchema.required, ['event_id']);
    const w = props('wait_for_event');
    assert.deepEqual(Object.keys(w).sort(), ['after', 'consumer', 'match', 'state', 'timeout', 'type']);
    assert.deepEqual([w.timeout!.minimum, w.timeout!.maximum, w.timeout!.default], [0, 55, 25]);
    assert.ok(JSON.stringify(w.type).includes('"string"'), 'type is a string (or a list of them)');
    assert.deepEqual(byName.wait_for_event!.inputSchema.required ?? [], [], 'every wait_for_event argument is optional');
    assert.match(byName.wait_for_event!.description ?? '', /prefix ending in \.\*/, 'prefixes are said to work');
    assert.doesNotMatch(byName.wait_for_event!.description ?? '', /exactly `type`/);
    assert.match(byName.wait_for_event!.description ?? '', /after = next_cursor/, 'how to wait past one call');
    // One minimum everywhere: the HTTP schema's MIN_APPROVAL_SECONDS (60 by default), not 1.
    assert.equal(props('request_approval').expires_in_seconds!.minimum, 60);
  });

  it('get_address returns the same {address} as GET /api/v1/addresses/{id}, without the token', async () => {
    const a = await createAddress(base, { name: 'mcp test', task_id: 'task-42' });
    const c = await session(a);
    const got = await callOk(c, 'get_address');
    const http = await api(base, 'GET', `/api/v1/addresses/${a.id}`, { token: a.token });
    assert.deepEqual(got, http.json);
    assert.equal(got.address.taskId, 'task-42');
    assert.ok(!JSON.stringify(got).includes(a.token));
  });

  it('list_events returns the same EventPage as GET events, honouring after and limit', async () => {
    const a = await createAddress(base);
    const sent = [];
    for (let i = 1; i <= 3; i++) sent.push(await deliverOk(base, a, { type: `t.${i}`, data: { i }, metadata: { k: `v${i}` } }));
    const c = await session(a);
    const all = await callOk(c, 'list_events');
    assert.deepEqual(all, (await listEvents(base, a)).json);
    assert.deepEqual(all, { events: sent, next_cursor: 3, has_more: false });
    const page = await callOk(c, 'list_events', { after: 1, limit: 1 });
    assert.deepEqual(page, (await listEvents(base, a, { after: 1, limit: 1 })).json);
    assert.deepEqual([page.events.map((e: any) => e.sequence), page.next_cursor, page.has_more], [[2], 2, true]);
    assert.deepEqual(await callOk(c, 'list_events', { after: 3 }), { events: [], next_cursor: 3, has_more: false });
    // Every result that carries events says, beside the JSON, that their content is data; others do not.
    const listed = (await c.callTool({ name: 'list_events' })) as CallToolResult;
    assert.deepEqual(listed.content[1], { type: 'text', text: UNTRUSTED_CONTENT });
    assert.equal(all.events[0].trust.ingress, 'inbox');
    const waited = (await c.callTool({ name: 'wait_for_event', arguments: { match: { 'trust.verified': true }, timeout: 0 } })) as CallToolResult;
    assert.deepEqual(waited.structuredContent, { event: null, next_cursor: 3 }, 'no inbox delivery passes trust.verified=true');
    assert.deepEqual(waited.content[1], { type: 'text', text: UNTRUSTED_CONTENT });
    const address = (await c.callTool({ name: 'get_address' })) as CallToolResult;
    assert.equal(address.content.length, 1);
  });

  it('list_events with wait is a long-poll woken by a delivery', async () => {
    const a = await createAddress(base);
    const c = await session(a);
    const t0 = performance.now();
    const pending = callOk(c, 'list_events', { wait: 10 });
    await sleep(200);
    const ev = await deliverOk(base, a, { data: 'wake up' });
    const page = await pending;
    const ms = performance.now() - t0;
    assert.deepEqual(page.events, [ev]);
    assert.ok(ms < 5000, `woken by the delivery, not by the 10 s wait (took ${Math.round(ms)} ms)`);
  });

  it('ack_event acknowledges the event: the same {event} as the HTTP ack, idempotent', async () => {
    const a = await createAddress(base);
    const ev = await deliverOk(base, a, { data: 'ack me' });
    const c = await session(a);
    const first = await callOk(c, 'ack_event', { event_id: ev.id });
    assert.equal(first.event.id, ev.id);
    assert.ok(!Number.isNaN(Date.parse(first.event.acknowledged_at)), 'acknowledged_at is a date-time');
    assert.deepEqual(first.event, { ...ev, acknowledged_at: first.event.acknowledged_at });
    const again = await callOk(c, 'ack_event', { event_id: ev.id });
    assert.deepEqual(again, first, 'a second ack returns the same acknowledged_at');
    const http = await api(base, 'POST', `/api/v1/addresses/${a.id}/events/${ev.id}/ack`, { token: a.token });
    assert.deepEqual(http.json, first);
    assert.deepEqual((await listEvents(base, a)).json.events, [first.event]);
  });

  it('wait_for_event returns an event already queued at once, and honours after', async () => {
    const a = await createAddress(base);
    const [e1, e2] = [await deliverOk(base, a, { type: 'x' }), await deliverOk(base, a, { type: 'y' })];
    const c = await session(a);
    assert.deepEqual(await callOk(c, 'wait_for_event', { timeout: 5 }), { event: e1, next_cursor: 1 });
    assert.deepEqual(await callOk(c, 'wait_for_event', { after: 1, timeout: 5 }), { event: e2, next_cursor: 2 });
    assert.deepEqual(await callOk(c, 'wait_for_event', { type: 'y', timeout: 5 }), { event: e2, next_cursor: 2 });
  });

  it('wait_for_event with match passes over events whose dotted paths differ (the client and CLI rule)', async () => {
    const a = await createAddress(base);
    await deliverOk(base, a, { type: 'pr', data: { pr: { state: 'open', number: 7 } } });
    const merged = await deliverOk(base, a, { type: 'pr', data: { pr: { state: 'merged', number: 7 } } });
    const c = await session(a);
    assert.deepEqual(await callOk(c, 'wait_for_event', { type: 'pr', match: { 'data.pr.state': 'merged', 'data.pr.number': '7' }, timeout: 5 }), {
      event: merged,
      next_cursor: 2,
    });
    assert.deepEqual(await callOk(c, 'wait_for_event', { match: { 'data.pr.state': 'closed' }, timeout: 0 }), { event: null, next_cursor: 2 });
    // JSON scalars stand for their text, as in the HTTP query (data.pr.number=7 matches JSON 7).
    assert.deepEqual(await callOk(c, 'wait_for_event', { match: { 'data.pr.number': 7, 'data.pr.state': 'merged' }, timeout: 0 }), {
      event: merged,
      next_cursor: 2,
    });
    assert.deepEqual(await callOk(c, 'wait_for_event', { match: { 'data.pr.state': 1 }, timeout: 0 }), { event: null, next_cursor: 2 });
    assert.match(await callError(c, 'wait_for_event', { match: { 'data.pr': { state: 'merged' } } }), /match/);
  });

  it('wait_for_event is woken by an HTTP delivery during the wait', async (t) => {
    const a = await createAddress(base);
    const c = await session(a);
    const pending = callOk(c, 'wait_for_event', { after: 0, timeout: 20 });
    await sleep(300);
    const t0 = performance.now();
    const ev = await deliverOk(base, a, { type: 'late.arrival', data: { n: 1 } });
    const got = await pending;
    const ms = performance.now() - t0;
    assert.deepEqual(got, { event: ev, next_cursor: ev.sequence });
    t.diagnostic(`wait_for_event returned ${Math.round(ms)} ms after the delivery's 202`);
    assert.ok(ms < 5000, `returned ${Math.round(ms)} ms after the delivery, long before the 20 s timeout`);
  });

  it('wait_for_event with type skips events of other types and returns the wanted one', async () => {
    const a = await createAddress(base);
    const c = await session(a);
    const pending = callOk(c, 'wait_for_event', { timeout: 20, type: 'wanted.type' });
    await sleep(200);
    const other = await deliverOk(base, a, { type: 'other.type' });
    await sleep(200);
    const wanted = await deliverOk(base, a, { type: 'wanted.type' });
    const got = await pending;
    assert.deepEqual(got, { event: wanted, next_cursor: wanted.sequence });
    assert.equal(other.sequence, 1);
    assert.equal(wanted.sequence, 2);
  });

  it('wait_for_event gives {event: null, next_cursor} on timeout, past any events of other types', async () => {
    const a = await createAddress(base);
    const c = await session(a);
    const t0 = performance.now();
    assert.deepEqual(await callOk(c, 'wait_for_event', { timeout: 0.3 }), { event: null, next_cursor: 0 });
    assert.ok(performance.now() - t0 >= 250, 'waited for the timeout');
    await deliverOk(base, a, { type: 'a' });
    await deliverOk(base, a, { type: 'b' });
    assert.deepEqual(await callOk(c, 'wait_for_event', { timeout: 0, type: 'c' }), { event: null, next_cursor: 2 });
    assert.equal(svc.running.hub.size(), 0, 'no waiter left behind');
  });

  it('bad arguments are tool errors (isError), naming the argument', async () => {
    const a = await createAddress(base);
    const c = await session(a);
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['list_events', { limit: 0 }, /limit/],
      ['list_events', { limit: 101 }, /limit/],
      ['list_events', { wait: 26 }, /wait/],
      ['list_events', { after: -1 }, /after/],
      ['list_events', { after: 1.5 }, /after/],
      ['list_events', { after: '3' }, /after/],
      ['list_events', { cursor: 3 }, /cursor/],
      ['ack_event', {}, /event_id/],
      ['ack_event', { event_id: 42 }, /event_id/],
      ['wait_for_event', { timeout: 56 }, /timeout/],
      ['wait_for_event', { state: 'done' }, /state.*unacked, acked, dead, quarantined, all/],
      ['wait_for_event', { match: ['nopair'] }, /match.*path=value/],
      ['list_events', { match: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`data.k${i}`, 'v'])) }, /match.*at most 20/],
      ['list_events', { consumer: 'Bad Name' }, /consumer.*a-z/],
      ['list_events', { consumer: '..' }, /consumer.*only dots/],
      ['wait_for_event', { consumer: '.' }, /consumer.*only dots/],
      ['list_events', { type: 'stripe*' }, /type/],
      ['wait_for_event', { timeout: -1 }, /timeout/],
      ['wait_for_event', { type: 7 }, /type/],
      ['get_address', { verbose: true }, /verbose/],
      ['request_approval', { question: 'Q?', expires_in_seconds: 1 }, /expires_in_seconds/],
      ['request_approval', { question: 'Q?', expires_in_seconds: 59 }, /expires_in_seconds/],
    ];
    for (const [tool, args, names] of cases) {
      assert.match(await callError(c, tool, args), names, `${tool} ${JSON.stringify(args)}`);
    }
    assert.match(await callError(c, 'no_such_tool', {}), /no_such_tool/);
  });

  it('an unknown event is a tool error carrying the API error body not_found', async () => {
    const a = await createAddress(base);
    const other = await createAddress(base);
    const foreign = await deliverOk(base, other, { data: 'not yours' });
    const c = await session(a);
    for (const id of ['evt_00000000000000000000000000', 'evt_nope', foreign.id]) {
      const text = await callError(c, 'ack_event', { event_id: id });
      assert.deepEqual(JSON.parse(text), { error: { code: 'not_found', message: 'Event not found.' } });
    }
    assert.equal((await listEvents(base, other)).json.events[0].acknowledged_at, undefined, "the other address's event is untouched");
  });

  it('deleting the address ends a waiting wait_for_event with a not_found tool error; the endpoint then answers 404', async () => {
    const a = await createAddress(base);
    const c = await session(a);
    const pending = c.callTool({ name: 'wait_for_event', arguments: { timeout: 20 } }) as Promise<CallToolResult>;
    await sleep(200);
    const del = await api(base, 'DELETE', `/api/v1/addresses/${a.id}`, { token: a.token });
    assert.equal(del.status, 204);
    const r = await pending;
    assert.equal(r.isError, true);
    assert.equal(JSON.parse((r.content[0] as { text: string }).text).error.code, 'not_found');
    assertError(await rpc(base, a, { jsonrpc: '2.0', id: 1, method: 'tools/list' }), 404, 'not_found');
  });

  it('a client that goes away ends its wait: no waiter is left behind', async () => {
    const a = await createAddress(base);
    const ctrl = new AbortController();
    const call = fetch(a.mcpUrl, {
      method: 'POST',
      headers: { ...MCP_HEADERS, authorization: `Bearer ${a.token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'wait_for_event', arguments: { timeout: 25 } } }),
      signal: ctrl.signal,
    }).catch((err: unknown) => err);
    for (let i = 0; i < 50 && svc.running.hub.size() === 0; i++) await sleep(20);
    assert.ok(svc.running.hub.size() >= 1, 'the call is waiting');
    ctrl.abort();
    assert.equal(((await call) as Error).name, 'AbortError');
    for (let i = 0; i < 100 && svc.running.hub.size() > 0; i++) await sleep(20);
    assert.equal(svc.running.hub.size(), 0, 'the waiter ended with the connection');
  });

  it('wrong, foreign and missing tokens are refused with 401 in the API error shape', async () => {
    const [a, b] = [await createAddress(base), await createAddress(base)];
    await assert.rejects(connect(a.mcpUrl, b.token), (err: unknown) => err instanceof StreamableHTTPError && err.code === 401);
    await assert.rejects(connect(a.mcpUrl, undefined), (err: unknown) => err instanceof StreamableHTTPError && err.code === 401);
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '0' } },
    };
    assertError(await rpc(base, a, init, MCP_HEADERS, b.token), 401, 'unauthorized');
    assertError(await rpc(base, a, init, MCP_HEADERS, null), 401, 'unauthorized');
    assertError(await rpc(base, a, init, MCP_HEADERS, 'aa_read_not-a-real-token'), 401, 'unauthorized');
    assertError(await rpc(base, a, init, MCP_HEADERS, `${a.token.slice(0, -1)}${a.token.endsWith('A') ? 'B' : 'A'}`), 401, 'unauthorized');
  });

  it('GET and DELETE answer 405 method_not_allowed with Allow: POST (stateless: no stream, no session)', async () => {
    const a = await createAddress(base);
    for (const method of ['GET', 'DELETE']) {
      const r = await api(base, method, a.mcpUrl, { token: a.token, headers: { accept: 'text/event-stream' } });
      assertError(r, 405, 'method_not_allowed');
      assert.equal(r.headers.get('allow'), 'POST');
    }
  });

  it('transport edges: batches and notifications work; a wrong Accept or version is 400 in the API shape, a non-JSON-RPC body a JSON-RPC -32600', async () => {
    const a = await createAddress(base);
    const ev = await deliverOk(base, a, { data: 1 });
    const batch = await rpc(base, a, [
      { jsonrpc: '2.0', id: 'l', method: 'tools/call', params: { name: 'list_events', arguments: {} } },
      { jsonrpc: '2.0', id: 'g', method: 'tools/call', params: { name: 'get_address', arguments: {}, _meta: { trace: 'extra members pass' } } },
    ]);
    assert.equal(batch.status, 200, batch.text);
    const byId = Object.fromEntries((batch.json as any[]).map((m) => [m.id, m.result.structuredContent]));
    assert.deepEqual(byId.l.events, [ev]);
    assert.equal(byId.g.address.id, a.id);
    const note = await rpc(base, a, { jsonrpc: '2.0', method: 'notifications/initialized' });
    assert.equal(note.status, 202);
    assertError(
      await rpc(base, a, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'content-type': 'application/json', accept: 'application/json' }),
      400,
      'invalid_request',
    );
    assertError(
      await rpc(base, a, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { ...MCP_HEADERS, 'mcp-protocol-version': '1999-01-01' }),
      400,
      'invalid_request',
    );
    for (const body of [
      { hello: 'world' },
      { jsonrpc: '2.0' },
      [],
      { jsonrpc: '2.0', id: null, method: 'tools/list' },
      'text',
      [{ jsonrpc: '1.0', id: 1, method: 'ping' }],
    ]) {
      assertJsonRpcError(await rpc(base, a, body), 400, null, -32600);
    }
    assertError(await api(base, 'POST', a.mcpUrl, { token: a.token, body: '{"jsonrpc":', headers: MCP_HEADERS }), 400, 'invalid_json');
    assertError(
      await api(base, 'POST', a.mcpUrl, { token: a.token, body: 'x', headers: { ...MCP_HEADERS, 'content-type': 'text/plain' } }),
      415,
      'unsupported_media_type',
    );
  });

  it('tools/call with params the SDK refuses is -32602 Invalid params naming the field, also inside a batch', async () => {
    const a = await createAddress(base);
    for (const params of [undefined, {}, { arguments: {} }, { name: 7 }, { name: 'list_events', arguments: 'x' }]) {
      const r = await rpc(base, a, { jsonrpc: '2.0', id: 5, method: 'tools/call', ...(params === undefined ? {} : { params }) });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.id, 5, r.text);
      assert.equal(r.json.error?.code, -32602, r.text);
      assert.match(r.json.error.message, /^Invalid params: params/, r.text);
      assert.ok(r.json.error.message.length < 400, `a short message, not a validation dump: ${r.json.error.message}`);
    }
    const batch = await rpc(base, a, [
      { jsonrpc: '2.0', id: 'bad', method: 'tools/call', params: {} },
      { jsonrpc: '2.0', id: 'good', method: 'tools/call', params: { name: 'get_address', arguments: {} } },
    ]);
    assert.equal(batch.status, 200, batch.text);
    const byId = Object.fromEntries((batch.json as any[]).map((m) => [m.id, m]));
    assert.equal(byId.bad.error.code, -32602, batch.text);
    assert.equal(byId.good.result.structuredContent.address.id, a.id, batch.text);
    const unknownTool = await rpc(base, a, { jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } });
    assert.equal(unknownTool.json.result?.isError, true, unknownTool.text);
    assert.match(unknownTool.json.result.content[0].text, /no_such_tool not found/);
    const unknownMethod = await rpc(base, a, { jsonrpc: '2.0', id: 7, method: 'no/such' });
    assert.equal(unknownMethod.json.error?.code, -32601, unknownMethod.text);
  });

  it('bounds a result: a batch holds at most 10 messages, and list_events pages stop at max(1 MiB, MAX_EVENT_BYTES) of stored JSON', async () => {
    const a = await createAddress(base);
    const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'list_events', arguments: { limit: 100 } } });
    const big = await rpc(
      base,
      a,
      Array.from({ length: 11 }, (_, i) => call(i)),
    );
    assertError(big, 400, 'invalid_request');
    assert.match(big.json.error.message, /at most 10/);
    // Three captured events of ~2.5 MB (a JSON body inline, its raw bytes beside the event): an HTTP
    // page (8 MiB budget) holds all three, an MCP page (4 MiB, MAX_EVENT_BYTES) one at a time.
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`${base}/api/v1/hooks/${a.id}/${a.secret}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify('x'.repeat(2500 * 1024)),
      });
      assert.equal(r.status, 202);
    }
    const http = await api(base, 'GET', `/api/v1/addresses/${a.id}/events?limit=100`, { token: a.token });
    assert.equal(http.json.events.length, 3);
    const seen: number[] = [];
    let after = 0;
    for (let guard = 0; guard < 10; guard++) {
      const r = await rpc(base, a, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_events', arguments: { after, limit: 100 } } });
      const page = r.json.result.structuredContent;
      assert.ok(page.events.length <= 1, 'at most one 2.5 MB event in a 4 MiB page');
      seen.push(...page.events.map((e: { sequence: number }) => e.sequence));
      after = page.next_cursor;
      if (!page.has_more) break;
    }
    assert.deepEqual(seen, [1, 2, 3], 'a cursor walk still reads every event');
  });

  it('is described in /openapi.json as a bearer-protected POST', async () => {
    const doc = (await api(base, 'GET', '/openapi.json')).json;
    const op = doc.paths['/api/v1/addresses/{addressId}/mcp']?.post;
    assert.ok(op, 'POST /api/v1/addresses/{addressId}/mcp is documented');
    assert.deepEqual(op.security, [{ bearerAuth: [] }]);
    for (const s of ['200', '400', '401', '404']) assert.ok(s in op.responses, `response ${s}`);
    assert.match(op.description, /wait_for_event/);
  });
});

describe('MCP endpoint during shutdown', () => {
  it('a waiting wait_for_event ends with {event: null} when the service stops', async () => {
    const svc = await startTestService();
    const a = await createAddress(svc.baseUrl);
    const c = await connect(a.mcpUrl, a.token);
    try {
      const pending = callOk(c, 'wait_for_event', { timeout: 25 });
      for (let i = 0; i < 50 && svc.running.hub.size() === 0; i++) await sleep(20);
      assert.equal(svc.running.hub.size(), 1, 'the call is waiting');
      const t0 = performance.now();
      await svc.stop();
      const got = await pending;
      assert.deepEqual(got, { event: null, next_cursor: 0 });
      assert.ok(performance.now() - t0 < 10_000, 'shutdown did not wait for the 25 s timeout');
    } finally {
      await c.close();
    }
  });
});
