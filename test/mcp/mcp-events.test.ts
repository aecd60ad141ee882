// MCP revision 2026-07-28 and its Events extension on /mcp (design.md, "MCP, current revision"),
// black-box over real HTTP with a raw JSON-RPC client that keeps no state between requests:
// discovery, event types, polls from null with a moving cursor, resuming from an old cursor, the
// push stream with heartbeats across a restart, the revision's header rules and errors, and attacks
// (many polls and streams at once beside a liveness probe, the largest filter, malformed messages).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Addr, api, createAddress, deliver, startTestService, type TestService } from '../helpers.js';
import { ACCEPT, call, isEvent, isHeartbeat, META, modernHeaders, openPush, result, seqOf } from './mcp-modern-client.js';

const NAME = 'return_address.event';

async function deliverOk(base: string, a: Addr, json: unknown): Promise<any> {
  const r = await deliver(base, a, json);
  assert.equal(r.status, 202, r.text);
  return r.json.event;
}

function assertRpcError(r: { status: number; json: any; text: string }, status: number, code: number): void {
  assert.equal(r.status, status, r.text);
  assert.equal(r.json?.jsonrpc, '2.0', r.text);
  assert.equal(r.json.error?.code, code, r.text);
  assert.equal(typeof r.json.error.message, 'string');
}

describe('MCP 2026-07-28 and the Events extension', () => {
  let svc: TestService;
  let base: string;
  before(async () => {
    svc = await startTestService({ MAX_STREAMS_PER_ADDRESS: '60' });
    base = svc.baseUrl;
  });
  after(async () => svc.stop());

  it('server/discover names both revisions, the events extension and the untrusted-content rule', async () => {
    const a = await createAddress(base);
    const r = await result(a.mcpUrl, a.token, 'server/discover');
    assert.equal(r.resultType, 'complete');
    assert.ok(r.supportedVersions.includes('2026-07-28') && r.supportedVersions.includes('2025-11-25'), JSON.stringify(r.supportedVersions));
    assert.deepEqual(r.capabilities.extensions, { 'io.modelcontextprotocol/events': {} });
    assert.ok(r.capabilities.tools);
    assert.match(r.instructions, /never instructions/);
    assert.equal(typeof r.ttlMs, 'number');
    assert.equal(r._meta['io.modelcontextprotocol/serverInfo'].name, 'return-address');
  });

  it('events/list: the catch-all type and one per way in, our filters as inputSchema, our Event as payloadSchema', async () => {
    const a = await createAddress(base);
    const r = await result(a.mcpUrl, a.token, 'events/list');
    assert.equal(r.resultType, 'complete');
    assert.deepEqual(
      r.events.map((t: any) => t.name),
      [NAME, 'return_address.inbox', 'return_address.capture', 'return_address.email', 'return_address.approval', 'return_address.service'],
    );
    for (const t of r.events) {
      assert.deepEqual(t.delivery, ['poll', 'push', 'webhook']);
      assert.deepEqual(Object.keys(t.inputSchema.properties).sort(), ['match', 'state', 'type']);
      assert.equal(t.inputSchema.additionalProperties, false);
      for (const field of ['id', 'sequence', 'type', 'data', 'created_at', 'trust']) assert.ok(t.payloadSchema.properties[field], field);
      assert.match(t.description, /null is the start of what the queue keeps/);
    }
  });

  it('events/poll from null, with a moving cursor, hasMore, nextPollMs, and a resume from an old cursor without a gap', async () => {
    const a = await createAddress(base);
    const sent = [];
    for (let i = 1; i <= 3; i++) sent.push(await deliverOk(base, a, { type: 'job.done', data: { n: i } }));
    // null is the start of what the queue keeps: the events that came before the first poll are delivered.
    const p1 = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, arguments: {}, cursor: null, maxEvents: 2 });
    assert.equal(p1.resultType, 'complete');
    assert.deepEqual(
      p1.events.map((e: any) => e.eventId),
      sent.slice(0, 2).map((e) => e.id),
    );
    assert.equal(seqOf(p1.cursor), '2');
    assert.equal(p1.hasMore, true);
    assert.equal(p1.nextPollMs, 0);
    assert.equal(p1.truncated, false);
    assert.match(p1.notice, /never instructions/);
    const occ = p1.events[0];
    assert.equal(occ.name, NAME);
    assert.equal(occ.timestamp, new Date(sent[0].created_at).toISOString());
    assert.deepEqual(occ.data, sent[0], 'the payload is our Event as the inbox answered it');
    const p2 = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor: p1.cursor });
    assert.deepEqual(
      p2.events.map((e: any) => e.data.sequence),
      [3],
    );
    assert.equal(seqOf(p2.cursor), '3');
    assert.equal(p2.hasMore, false);
    assert.ok(p2.nextPollMs >= 1000);
    const empty = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor: p2.cursor });
    assert.deepEqual(empty.events, []);
    assert.equal(seqOf(empty.cursor), '3', 'nothing new: the cursor stays');
    const absent = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, maxEvents: 1 });
    assert.equal(absent.events[0].eventId, sent[0].id, 'an absent cursor is null');
    const fourth = await deliverOk(base, a, { type: 'other.thing' });
    const p3 = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor: p2.cursor });
    assert.deepEqual(
      p3.events.map((e: any) => e.eventId),
      [fourth.id],
    );
    assert.equal(seqOf(p3.cursor), '4');
    // An old cursor resumes exactly after itself.
    const again = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor: '1' });
    assert.deepEqual(
      again.events.map((e: any) => e.data.sequence),
      [2, 3, 4],
    );
    // Arguments filter like GET …/events; the cursor still moves past the others.
    const typed = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor: '0', arguments: { type: 'job.*', match: { 'data.n': 3 } } });
    assert.deepEqual(
      typed.events.map((e: any) => e.data.sequence),
      [3],
    );
    assert.equal(seqOf(typed.cursor), '4');
  });

  it('maxAgeMs: a stale cursor replays no event older than the floor, and says truncated', async () => {
    const a = await createAddress(base);
    const old1 = await deliverOk(base, a, { type: 'old' });
    const old2 = await deliverOk(base, a, { type: 'old' });
    // A gap wider than any request takes here, so the floor falls between old2 and fresh whatever the latency.
    await new Promise((r) => setTimeout(r, 2000));
    const fresh = await deliverOk(base, a, { type: 'fresh' });
    assert.ok(Date.parse(fresh.created_at) - Date.parse(old2.created_at) >= 2000);
    // The floor is at least one millisecond after old2 (the server's clock reads no earlier than ours did).
    const maxAgeMs = Date.now() - Date.parse(old2.created_at) - 1;
    const p = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor: '0', maxAgeMs });
    assert.deepEqual(
      p.events.map((e: any) => e.eventId),
      [fresh.id],
    );
    assert.equal(p.truncated, true, 'old events after the cursor were skipped');
    assert.equal(seqOf(p.cursor), '3');
    const s = await openPush(a.mcpUrl, a.token, { name: NAME, cursor: '0', maxAgeMs: Date.now() - Date.parse(old2.created_at) - 1 });
    try {
      const active = await s.next((m) => m.method === 'notifications/events/active');
      assert.equal(active.params.truncated, true);
      assert.equal(seqOf(active.params.cursor), '2');
      const e = await s.next(isEvent);
      assert.equal(e.params.eventId, fresh.id);
    } finally {
      s.close();
    }
    // A floor before every event skips nothing; maxAgeMs 0 skips them all; null ignores it.
    const all = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor: '0', maxAgeMs: 3_600_000 });
    assert.deepEqual(
      all.events.map((e: any) => e.eventId),
      [old1.id, old2.id, fresh.id],
    );
    assert.equal(all.truncated, false);
    await new Promise((r) => setTimeout(r, 5));
    const none = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor: '0', maxAgeMs: 0 });
    assert.deepEqual(none.events, []);
    assert.equal(seqOf(none.cursor), '3');
    assert.equal(none.truncated, true);
    const fromNull = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor: null, maxAgeMs: 0 });
    assert.deepEqual(fromNull.events, [], 'null is the start of the queue, and maxAgeMs bounds it as any cursor');
    assert.equal(fromNull.truncated, true);
    assert.equal(seqOf(fromNull.cursor), '3');
  });

  it('per-ingress event types: only their way in, named in each occurrence, not widened by arguments', async () => {
    const a = await createAddress(base);
    const e1 = await deliverOk(base, a, { type: 'job.done' });
    const e2 = await deliverOk(base, a, { type: 'job.done' });
    const inbox = await result(a.mcpUrl, a.token, 'events/poll', { name: 'return_address.inbox', cursor: '0' });
    assert.deepEqual(
      inbox.events.map((e: any) => [e.eventId, e.name]),
      [
        [e1.id, 'return_address.inbox'],
        [e2.id, 'return_address.inbox'],
      ],
    );
    const mail = await result(a.mcpUrl, a.token, 'events/poll', { name: 'return_address.email', cursor: '0' });
    assert.deepEqual(mail.events, []);
    assert.equal(seqOf(mail.cursor), '2', 'the cursor moves past the other ways in');
    const widened = await result(a.mcpUrl, a.token, 'events/poll', {
      name: 'return_address.email',
      cursor: '0',
      arguments: { match: { 'trust.ingress': 'inbox' } },
    });
    assert.deepEqual(widened.events, [], 'an argument cannot turn the email type into another');
    const s = await openPush(a.mcpUrl, a.token, { name: 'return_address.inbox', cursor: '1' });
    try {
      const e = await s.next(isEvent);
      assert.equal(e.params.eventId, e2.id);
      assert.equal(e.params.name, 'return_address.inbox');
    } finally {
      s.close();
    }
  });

  it('truncated: retention removed events after the cursor', async () => {
    const small = await startTestService({ MAX_EVENTS_PER_ADDRESS: '3' });
    try {
      const a = await createAddress(small.baseUrl);
      for (let i = 0; i < 3; i++) {
        const e = await deliverOk(small.baseUrl, a, { type: 't' });
        assert.equal((await api(small.baseUrl, 'POST', `/api/v1/addresses/${a.id}/events/${e.id}/ack`, { token: a.token })).status, 200);
      }
      await deliverOk(small.baseUrl, a, { type: 't' }); // full: the oldest acknowledged event is pruned
      const p = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor: '0' });
      assert.equal(p.truncated, true, JSON.stringify(p));
      assert.ok(p.events[0].data.sequence > 1);
      const fromKept = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor: String(p.events[0].data.sequence - 1) });
      assert.equal(fromKept.truncated, false);
    } finally {
      await small.stop();
    }
  });

  it('an event held in quarantine right after the cursor is not a gap: truncated stays false', async () => {
    const a = await createAddress(base);
    const put = await api(base, 'PUT', `/api/v1/addresses/${a.id}/sender-policy`, { token: a.token, json: { capture: { require_signature: true } } });
    assert.equal(put.status, 200, put.text);
    const first = await deliverOk(base, a, { type: 'before' });
    // An unsigned capture fails require_signature: stored at sequence 2, held, skipped by default reads.
    const held = await api('', 'POST', a.body.endpoints.hook_url, { body: '{"ok":true}', headers: { 'content-type': 'application/json' } });
    assert.equal(held.status, 202, held.text);
    const third = await deliverOk(base, a, { type: 'after' });
    const p = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor: String(first.sequence) });
    assert.deepEqual(
      p.events.map((e: any) => e.eventId),
      [third.id],
    );
    assert.equal(p.truncated, false, JSON.stringify(p));
    const quarantined = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor: String(first.sequence), arguments: { state: 'quarantined' } });
    assert.deepEqual(
      quarantined.events.map((e: any) => e.eventId),
      [held.json.event.id],
    );
    assert.equal(quarantined.truncated, false);
    const s = await openPush(a.mcpUrl, a.token, { name: NAME, cursor: String(first.sequence) });
    try {
      const active = await s.next((m) => m.method === 'notifications/events/active');
      assert.equal(active.params.truncated, false);
      assert.equal((await s.next(isEvent)).params.eventId, third.id);
    } finally {
      s.close();
    }
  });

  it('a payload over 256 KiB carries a reference that answers the whole event', async () => {
    const a = await createAddress(base);
    const big = await deliverOk(base, a, { type: 'big', data: { blob: 'x'.repeat(300 * 1024) } });
    const p = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor: '0' });
    const d = p.events[0].data;
    assert.equal(d.id, big.id);
    assert.equal(d.data.omitted, true);
    assert.ok(d.data.size > 300 * 1024);
    const r = await api(base, 'GET', d.data.raw.url, { token: a.token });
    assert.equal(r.status, 200);
    assert.deepEqual(r.json.events[0], big);
    // The bound is on the whole occurrence: an Event just under 256 KiB whose envelope takes it over is a reference too.
    const LIMIT = 256 * 1024;
    const probe = await deliverOk(base, a, { type: 'edge', data: { blob: 'x'.repeat(1000) } });
    const overhead = Buffer.byteLength(JSON.stringify(probe)) - 1000;
    const edge = await deliverOk(base, a, { type: 'edge', data: { blob: 'x'.repeat(LIMIT - overhead - 20) } });
    assert.ok(Buffer.byteLength(JSON.stringify(edge)) <= LIMIT, 'the Event itself is within the bound');
    const all = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor: '0' });
    for (const o of all.events) assert.ok(Buffer.byteLength(JSON.stringify(o)) <= LIMIT, `occurrence of ${o.eventId} within 256 KiB`);
    const edgeOcc = all.events.find((o: any) => o.eventId === edge.id);
    assert.equal(edgeOcc.data.data.omitted, true);
    assert.deepEqual((await api(base, 'GET', edgeOcc.data.data.raw.url, { token: a.token })).json.events[0], edge);
    assert.deepEqual(all.events.find((o: any) => o.eventId === probe.id).data, probe, 'a small event is carried whole');
  });

  it('tools/list and tools/call answer as in 2025-11-25, with the revision fields', async () => {
    const a = await createAddress(base);
    const ev = await deliverOk(base, a, { type: 'ping' });
    const tools = await result(a.mcpUrl, a.token, 'tools/list');
    assert.equal(tools.resultType, 'complete');
    assert.ok(['get_address', 'list_events', 'ack_event', 'wait_for_event'].every((n) => tools.tools.some((t: any) => t.name === n)));
    const listed = await result(a.mcpUrl, a.token, 'tools/call', { name: 'list_events', arguments: {} });
    assert.equal(listed.resultType, 'complete');
    assert.deepEqual(listed.structuredContent.events, [ev]);
    const bad = await result(a.mcpUrl, a.token, 'tools/call', { name: 'list_events', arguments: { bogus: 1 } });
    assert.equal(bad.isError, true, 'a bad argument is a tool error, as in 2025-11-25');
    // A call with a progress token is answered on an SSE stream: progress, then the result.
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'wait_for_event', arguments: { after: 1, timeout: 0 }, _meta: { ...META, progressToken: 'p' } },
    });
    const sse = await api('', 'POST', a.mcpUrl, { body, headers: modernHeaders('tools/call', 'wait_for_event'), token: a.token });
    assert.equal(sse.status, 200);
    assert.match(sse.headers.get('content-type') ?? '', /text\/event-stream/);
    const last = JSON.parse(sse.text.trim().split('\n\n').pop()!.slice(6));
    assert.equal(last.id, 7);
    assert.equal(last.result.structuredContent.event, null);
  });

  it("the revision's header rules and JSON-RPC errors: 400/404 with a JSON-RPC body, never 500", async () => {
    const a = await createAddress(base);
    const body = (method: string, params: object = {}, meta: object = META) =>
      JSON.stringify({ jsonrpc: '2.0', id: 9, method, params: { ...params, _meta: meta } });
    const post = (b: string, headers: Record<string, string>) => api('', 'POST', a.mcpUrl, { body: b, headers, token: a.token });
    // Header missing, or different from the body's version.
    assertRpcError(await post(body('server/discover'), { ...ACCEPT, 'mcp-method': 'server/discover' }), 400, -32020);
    assertRpcError(await post(body('server/discover'), { ...modernHeaders('server/discover'), 'mcp-protocol-version': '2025-11-25' }), 400, -32020);
    assertRpcError(await post(body('server/discover'), { ...modernHeaders('server/discover'), 'mcp-method': 'tools/list' }), 400, -32020);
    assertRpcError(await post(body('tools/call', { name: 'get_address' }), modernHeaders('tools/call', 'list_events')), 400, -32020);
    // A version this server does not speak, in _meta: -32022 listing the supported ones.
    const unsupported = await post(body('server/discover', {}, { ...META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' }), {
      ...modernHeaders('server/discover'),
      'mcp-protocol-version': '2099-01-01',
    });
    assertRpcError(unsupported, 400, -32022);
    assert.ok(unsupported.json.error.data.supported.includes('2026-07-28'));
    assert.equal(unsupported.json.error.data.requested, '2099-01-01');
    // The header says 2026-07-28 but the body has no per-request version (an old client's initialize),
    // or _meta lacks a required field: the request is malformed, Invalid params with 400.
    assertRpcError(await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }), modernHeaders('initialize')), 400, -32602);
    const { 'io.modelcontextprotocol/clientCapabilities': _caps, ...noCaps } = META;
    const { 'io.modelcontextprotocol/protocolVersion': _v, ...noVersion } = META;
    const { 'io.modelcontextprotocol/clientInfo': _info, ...noInfo } = META;
    for (const meta of [noCaps, noVersion, { ...META, 'io.modelcontextprotocol/clientCapabilities': 'all' }]) {
      const r = await post(body('server/discover', {}, meta), modernHeaders('server/discover'));
      assertRpcError(r, 400, -32602);
      assert.equal(r.json.id, 9, 'the error carries the request id');
    }
    // clientInfo is optional.
    const noInfoAnswer = await post(body('server/discover', {}, noInfo), modernHeaders('server/discover'));
    assert.equal(noInfoAnswer.status, 200, noInfoAnswer.text);
    assert.equal(noInfoAnswer.json.result.resultType, 'complete');
    // A body version that differs from the header is a mismatch before it is an unsupported version.
    assertRpcError(
      await post(body('server/discover', {}, { ...META, 'io.modelcontextprotocol/protocolVersion': 'v999.0.0' }), modernHeaders('server/discover')),
      400,
      -32020,
    );
    // Not a request, a batch, a null id: Invalid Request.
    for (const b of [
      '{"hello":1}',
      '[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
      '{"jsonrpc":"2.0","id":null,"method":"ping"}',
      '"text"',
      '{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}',
    ]) {
      assertRpcError(await post(b, modernHeaders('ping')), 400, -32600);
    }
    // Malformed JSON stays the API's error.
    const broken = await post('{"jsonrpc":', modernHeaders('ping'));
    assert.equal(broken.status, 400);
    assert.equal(broken.json.error.code, 'invalid_json');
    // Methods this revision does not offer here.
    // ping and logging/setLevel are removed by the revision; the rest are not offered here.
    for (const m of ['initialize', 'ping', 'logging/setLevel', 'resources/list', 'subscriptions/listen']) {
      const r = await post(body(m), modernHeaders(m));
      assertRpcError(r, 404, -32601);
    }
    // Bad subscriptions: InvalidParams or NotFound, as JSON-RPC errors.
    const bad: [object, number][] = [
      [{ name: 'nope', cursor: null }, -32023],
      [{ cursor: null }, -32602],
      [{ name: NAME, cursor: 'abc' }, -32602],
      [{ name: NAME, cursor: 5 }, -32602],
      [{ name: NAME, cursor: '99999999999999999' }, -32602],
      [{ name: NAME, arguments: { bogus: 1 } }, -32602],
      [{ name: NAME, arguments: 'x' }, -32602],
      [{ name: NAME, arguments: { type: 5 } }, -32602],
      [{ name: NAME, arguments: { type: '*' } }, -32602],
      [{ name: NAME, arguments: { match: { a: { deep: 1 } } } }, -32602],
      [{ name: NAME, arguments: { state: 'maybe' } }, -32602],
      [{ name: NAME, maxEvents: 0 }, -32602],
      [{ name: NAME, maxEvents: 1.5 }, -32602],
      [{ name: NAME, cursor: '0', maxAgeMs: -1 }, -32602],
      [{ name: NAME, cursor: '0', maxAgeMs: 'old' }, -32602],
      [{ name: NAME, heartbeatMs: 10 }, -32602],
    ];
    for (const [params, code] of bad) {
      if (!('heartbeatMs' in params)) {
        const r = await call(a.mcpUrl, a.token, 'events/poll', params as Record<string, unknown>);
        assertRpcError(r, 200, code);
        assert.equal(r.json.id, 1);
      }
      if ('maxEvents' in params) continue; // a poll's own parameter
      const s = await call(a.mcpUrl, a.token, 'events/stream', params as Record<string, unknown>);
      assertRpcError(s, 200, code);
    }
    // Deep nesting in params is refused before it is walked.
    const deep = `${'{"d":'.repeat(5000)}1${'}'.repeat(5000)}`;
    const nestedBody = `{"jsonrpc":"2.0","id":3,"method":"events/poll","params":{"name":"${NAME}","arguments":{"match":{"a":${deep}}},"_meta":${JSON.stringify(META)}}}`;
    const nested = await post(nestedBody, modernHeaders('events/poll'));
    assert.ok(nested.status === 400 || nested.json?.error, nested.text.slice(0, 200));
    assert.notEqual(nested.status, 500);
    // Authentication comes first, in the API's shape.
    const anon = await api('', 'POST', a.mcpUrl, { body: body('server/discover'), headers: modernHeaders('server/discover') });
    assert.equal(anon.status, 401);
    assert.equal(anon.json.error.code, 'unauthorized');
  });

  it('the largest filter is served; one condition more is InvalidParams naming the limit', async () => {
    const a = await createAddress(base);
    await deliverOk(base, a, { type: 'job.done', data: { k0: 'v' } });
    const list = await result(a.mcpUrl, a.token, 'events/list');
    const maxTypes = list.events[0].inputSchema.properties.type.anyOf[1].maxItems as number;
    const maxMatch = list.events[0].inputSchema.properties.match.anyOf[1].maxItems as number;
    const types = Array.from({ length: maxTypes }, (_, i) => (i === 0 ? 'job.*' : `t${i}.${'x'.repeat(50)}`));
    const match = Object.fromEntries(Array.from({ length: maxMatch }, (_, i) => [i === 0 ? 'data.k0' : `data.k${i}`, i === 0 ? 'v' : null]));
    // data.kN = null never matches a missing path: only the first condition can hold, so use one at a time.
    const p = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor: '0', arguments: { type: types, match: { 'data.k0': 'v' } } });
    assert.equal(p.events.length, 1);
    const allMatch = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor: '0', arguments: { type: types, match } });
    assert.equal(allMatch.events.length, 0);
    assert.equal(seqOf(allMatch.cursor), '1', 'the scan still moved past the event');
    const tooMany = await call(a.mcpUrl, a.token, 'events/poll', { name: NAME, arguments: { type: [...types, 'one.more'] } });
    assertRpcError(tooMany, 200, -32602);
    assert.match(tooMany.json.error.message, /at most/);
  });

  it('events/stream: active, the backlog and new events with their cursors, heartbeats with the position', async () => {
    const a = await createAddress(base);
    const first = await deliverOk(base, a, { type: 'a' });
    const s = await openPush(a.mcpUrl, a.token, { name: NAME, cursor: '0', heartbeatMs: 1000 }, 'sub-7');
    try {
      assert.equal(s.status, 200);
      const active = await s.next((m) => m.method === 'notifications/events/active');
      assert.equal(seqOf(active.params.cursor), '0');
      assert.equal(active.params.truncated, false);
      assert.equal(active.params._meta['io.modelcontextprotocol/subscriptionId'], 'sub-7');
      const e1 = await s.next(isEvent);
      assert.equal(e1.params.eventId, first.id);
      assert.equal(seqOf(e1.params.cursor), '1');
      assert.deepEqual(e1.params.data, first);
      const second = await deliverOk(base, a, { type: 'b' });
      const e2 = await s.next((m) => isEvent(m) && m.params.eventId === second.id);
      assert.equal(seqOf(e2.params.cursor), '2');
      const hb = await s.next(isHeartbeat, 5000);
      assert.equal(seqOf(hb.params.cursor), '2');
      assert.equal(hb.params._meta['io.modelcontextprotocol/subscriptionId'], 'sub-7');
    } finally {
      s.close();
    }
  });

  it('events/stream from null: the events that came before it opened, then what arrives', async () => {
    const a = await createAddress(base);
    const b1 = await deliverOk(base, a, { type: 'before' });
    const b2 = await deliverOk(base, a, { type: 'before' });
    const s = await openPush(a.mcpUrl, a.token, { name: NAME, cursor: null, heartbeatMs: 1000 });
    try {
      const active = await s.next((m) => m.method === 'notifications/events/active');
      assert.equal(seqOf(active.params.cursor), '0');
      assert.equal(active.params.truncated, false);
      const hb = await s.next(isHeartbeat, 5000);
      assert.equal(seqOf(hb.params.cursor), '2');
      const after = await deliverOk(base, a, { type: 'after' });
      await s.next((m) => isEvent(m) && m.params.eventId === after.id);
      assert.deepEqual(
        s.messages.filter(isEvent).map((m) => [m.params.eventId, seqOf(m.params.cursor)]),
        [
          [b1.id, '1'],
          [b2.id, '2'],
          [after.id, '3'],
        ],
      );
    } finally {
      s.close();
    }
  });
});
