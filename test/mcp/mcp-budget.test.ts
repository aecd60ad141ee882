// MCP results are bounded, so one request cannot make the service build a huge answer: all the list_events and wait_for_event calls of one request
// (a batch) share two pages' worth of event bytes, with no "at least one event" exception, and a
// result's JSON text carries the very bytes GET returns for the event.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Addr, api, createAddress, listEvents, STORE, startTestService, type TestService } from '../helpers.js';
import { LIVENESS_MS, startLivenessProbe } from '../liveness-probe.js';

const MCP_HEADERS = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
const rpc = (svc: TestService, a: Addr, body: unknown) =>
  api(svc.baseUrl, 'POST', a.mcpUrl, { body: JSON.stringify(body), headers: MCP_HEADERS, token: a.token });

describe(`MCP result budget (${STORE})`, () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ MAX_EVENT_BYTES: String(64 * 1024) });
  });
  after(() => svc.stop());

  it('a batch of ten list_events over 2.4 MB of events returns at most two pages (2 MiB) of events in all', { timeout: 60_000 }, async () => {
    const a = await createAddress(svc.baseUrl);
    for (let i = 0; i < 40; i++) {
      const r = await api(svc.baseUrl, 'POST', a.inboxUrl, { json: { data: { i, pad: 'z'.repeat(60_000) } } });
      assert.equal(r.status, 202, r.text);
    }
    const probe = startLivenessProbe(svc.baseUrl);
    const batch = await rpc(
      svc,
      a,
      Array.from({ length: 10 }, (_, i) => ({
        jsonrpc: '2.0',
        id: i,
        method: 'tools/call',
        params: { name: 'list_events', arguments: { after: 0, limit: 100 } },
      })),
    );
    const live = await probe.stop();
    assert.equal(batch.status, 200);
    let events = 0;
    let refused = 0;
    for (const m of batch.json as any[]) {
      if (m.result.isError) {
        refused++;
        assert.match(m.result.content[0].text, /request of its own/);
      } else {
        events += m.result.structuredContent.events.length;
      }
    }
    assert.ok(refused >= 7, `calls past the budget are refused: ${refused}`);
    assert.ok(events * 60_000 <= 2 * 1024 * 1024 + 60_000, `${events} events of 60 KB in one request`);
    assert.ok(Buffer.byteLength(batch.text) < 16 * 1024 * 1024, `the batch's answer is bounded: ${Buffer.byteLength(batch.text)} bytes`);
    assert.ok(live.maxMs < LIVENESS_MS, JSON.stringify(live));
  });

  it('the list_events text carries the event exactly as GET does (big integers keep their digits)', async () => {
    const a = await createAddress(svc.baseUrl);
    const body = '{"id": 123456789012345678901234567890, "f": 1.10}';
    assert.equal(
      (await fetch(`${svc.baseUrl}/api/v1/hooks/${a.id}/${a.secret}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).status,
      202,
    );
    const page = await listEvents(svc.baseUrl, a);
    const r = await rpc(svc, a, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_events', arguments: {} } });
    assert.equal(r.json.result.content[0].text, page.text, 'the MCP text is the GET page byte for byte');
  });
});
