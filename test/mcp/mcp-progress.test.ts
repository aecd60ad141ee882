// MCP wait_for_event for real agent clients (design.md, "MCP"): a call that carries a progress
// token gets notifications/progress at least every 10 s while it waits, seen here by the SDK's own
// client, and then its result; a call without one is still answered as plain JSON.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Progress } from '@modelcontextprotocol/sdk/types.js';
import { api, createAddress, deliver, STORE, startTestService, type TestService } from '../helpers.js';

describe(`MCP wait_for_event progress (${STORE})`, () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(async () => {
    await svc.stop();
  });

  it('sends notifications/progress at least every 10 s to a call with a progress token, then the result', async () => {
    const a = await createAddress(svc.baseUrl);
    const client = new Client({ name: 'progress-test', version: '0.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(a.mcpUrl), { requestInit: { headers: { authorization: `Bearer ${a.token}` } } }));
    try {
      const seen: { at: number; p: Progress }[] = [];
      let secondSeen!: () => void;
      const second = new Promise<void>((resolve) => {
        secondSeen = resolve;
      });
      const t0 = performance.now();
      const pending = client.callTool({ name: 'wait_for_event', arguments: { timeout: 40, type: 'wanted' } }, undefined, {
        onprogress: (p) => {
          seen.push({ at: performance.now() - t0, p });
          if (seen.length === 2) secondSeen();
        },
        timeout: 60_000,
        resetTimeoutOnProgress: true,
      });
      // Two notifications, awaited rather than a fixed 11.5 s; 11.5 s stays the deadline (seen.length is asserted below).
      const deadline = setTimeout(secondSeen, 11_500);
      await second;
      clearTimeout(deadline);
      await deliver(svc.baseUrl, a, { type: 'other' });
      const wanted = await deliver(svc.baseUrl, a, { type: 'wanted', data: { ok: true } });
      const result = await pending;
      assert.equal(result.isError, undefined, JSON.stringify(result));
      assert.deepEqual((result.structuredContent as { event: { id: string } }).event.id, wanted.json.event.id);
      assert.equal((result.structuredContent as { next_cursor: number }).next_cursor, 2);
      assert.ok(seen.length >= 2, `${seen.length} progress notifications in 11.5 s`);
      let previous = 0;
      for (const { at, p } of seen) {
        assert.ok(at - previous <= 10_500, `a notification ${Math.round(at - previous)} ms after the previous one`);
        assert.equal(p.total, 40);
        assert.ok(p.progress > 0);
        previous = at;
      }
      assert.ok(
        seen.every((s, i) => i === 0 || s.p.progress > seen[i - 1]!.p.progress),
        'progress increases',
      );
    } finally {
      await client.close();
    }
  });

  it('a call without a progress token is answered as application/json', async () => {
    const a = await createAddress(svc.baseUrl);
    const r = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/mcp`, {
      token: a.token,
      headers: { accept: 'application/json, text/event-stream' },
      json: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'wait_for_event', arguments: { timeout: 0.2 } } },
    });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /application\/json/);
    assert.deepEqual(r.json.result.structuredContent, { event: null, next_cursor: 0 });
  });
});
