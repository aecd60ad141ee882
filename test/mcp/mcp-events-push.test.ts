// events/stream of MCP revision 2026-07-28 across a restart (design.md, "MCP, current revision"):
// a push client that reconnects with its last cursor after the service restarts misses nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Addr, createAddress, deliver, startTestService } from '../helpers.js';
import { isEvent, isHeartbeat, openPush, seqOf } from './mcp-modern-client.js';

const NAME = 'return_address.event';

async function deliverOk(base: string, a: Addr, json: unknown): Promise<any> {
  const r = await deliver(base, a, json);
  assert.equal(r.status, 202, r.text);
  return r.json.event;
}

describe('events/stream across a service restart', () => {
  it('the client reconnects with its last cursor and misses nothing', async () => {
    let svc = await startTestService();
    const a = await createAddress(svc.baseUrl);
    const path = new URL(a.mcpUrl).pathname;
    const inbox = new URL(a.inboxUrl).pathname;
    const got: string[] = [];
    let cursor: string | null = null;
    try {
      const before1 = await deliverOk(svc.baseUrl, a, { type: 'x' });
      const s1 = await openPush(svc.baseUrl + path, a.token, { name: NAME, cursor, heartbeatMs: 1000 });
      const m1 = await s1.next(isEvent);
      got.push(m1.params.eventId);
      cursor = m1.params.cursor;
      const hb = await s1.next(isHeartbeat, 5000);
      cursor = hb.params.cursor;
      await svc.stop({ keepStorage: true });
      await s1.ended;
      // The server ended it: its final frame is the request's result.
      assert.ok(
        s1.messages.some((m) => m.id !== undefined && m.result?.resultType === 'complete'),
        JSON.stringify(s1.messages),
      );
      svc = await startTestService({}, svc.storage);
      const moved = { ...a, inboxUrl: svc.baseUrl + inbox };
      const during = await deliverOk(svc.baseUrl, moved, { type: 'y' });
      const s2 = await openPush(svc.baseUrl + path, a.token, { name: NAME, cursor, heartbeatMs: 1000 });
      try {
        const active = await s2.next((m) => m.method === 'notifications/events/active');
        assert.equal(active.params.cursor, cursor);
        const m2 = await s2.next(isEvent);
        got.push(m2.params.eventId);
        const after1 = await deliverOk(svc.baseUrl, moved, { type: 'z' });
        const m3 = await s2.next((m) => isEvent(m) && m.params.eventId === after1.id);
        got.push(m3.params.eventId);
        assert.deepEqual(got, [before1.id, during.id, after1.id], 'every event once, in order');
        const hb2 = await s2.next((m) => isHeartbeat(m) && seqOf(m.params.cursor) === '3', 5000);
        assert.equal(seqOf(hb2.params.cursor), '3');
      } finally {
        s2.close();
      }
    } finally {
      await svc.stop();
    }
  });
});
