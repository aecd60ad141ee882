// A crash an adversarial run found, as the stress suite keeps it: a 25 MiB text/plain capture of control bytes was
// stored as a 314 MB event; one GET of it peaked at ~6 GB and blocked the event loop 8-40 s, ten
// concurrent reads on PostgreSQL all got 500, and an MCP batch of ten list_events over it ended
// the process. Now the body is stored once beside a small event; every read of it is small.
// A liveness probe runs beside each attack; memory is bounded by figures derived from the limits.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { api, createAddress, STORE, startTestService, type TestService } from '../helpers.js';
import { LIVENESS_MS, startLivenessProbe } from '../liveness-probe.js';

const MAX_CAPTURE = 25 * 1024 * 1024;
const MiB = 2 ** 20;

describe(`a 25 MiB capture of control bytes (${STORE})`, () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(() => svc.stop());

  it('is stored beside a small event; ten concurrent GETs and an MCP batch over it stay small and the service stays live', { timeout: 180_000 }, async () => {
    const a = await createAddress(svc.baseUrl);
    const body = Buffer.alloc(MAX_CAPTURE, 0x01);
    global.gc?.();
    const rss0 = process.memoryUsage().rss;
    let probe = startLivenessProbe(svc.baseUrl);
    const r = await fetch(`${svc.baseUrl}/api/v1/hooks/${a.id}/${a.secret}`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body });
    assert.equal(r.status, 202, await r.text());
    let live = await probe.stop();
    assert.ok(live.maxMs < LIVENESS_MS && live.failures.length === 0, `capture: ${JSON.stringify(live)}`);

    probe = startLivenessProbe(svc.baseUrl);
    const pages = await Promise.all(Array.from({ length: 10 }, () => api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events`, { token: a.token })));
    live = await probe.stop();
    for (const p of pages) {
      assert.equal(p.status, 200, p.text.slice(0, 200));
      assert.ok(p.text.length < 64 * 1024, `the page is small: ${p.text.length} bytes`);
    }
    assert.ok(live.maxMs < LIVENESS_MS && live.failures.length === 0, `reads: ${JSON.stringify(live)}`);

    probe = startLivenessProbe(svc.baseUrl);
    const batch = await api(svc.baseUrl, 'POST', a.mcpUrl, {
      token: a.token,
      headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
      body: JSON.stringify(
        Array.from({ length: 10 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'list_events', arguments: {} } })),
      ),
    });
    live = await probe.stop();
    assert.equal(batch.status, 200);
    assert.ok(batch.text.length < MiB, `the batch's answer is small: ${batch.text.length} bytes`);
    assert.ok(live.maxMs < LIVENESS_MS && live.failures.length === 0, `MCP: ${JSON.stringify(live)}`);

    const raw = await fetch(pages[0]!.json.events[0].data.raw.url, { headers: { authorization: `Bearer ${a.token}` } });
    const bytes = Buffer.from(await raw.arrayBuffer());
    assert.ok(bytes.equals(body), 'the raw route answers the exact 25 MiB');
    // This process holds the client's side too (the body sent, the bytes read back, fetch's buffers)
    // and the service's (the request body, its UTF-8 text, the copy bound into the store, chunk
    // reads): 16x the body leaves room for both and the allocator; before, one GET alone took ~6 GB.
    const grew = (process.memoryUsage().rss - rss0) / MiB;
    assert.ok(grew < (16 * MAX_CAPTURE) / MiB, `RSS grew ${grew.toFixed(0)} MiB`);
  });
});
