// MCP revision 2026-07-28's Events extension under attack (design.md, "MCP, current revision"):
// many polls and push streams on one address at once beside a liveness probe, and the stream cap.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Addr, createAddress, createTestStorage, deliver, type SpawnedService, spawnService, type TestStorage } from '../helpers.js';
import { LIVENESS_MS, startLivenessProbe } from '../liveness-probe.js';
import { call, isEvent, openPush, result } from './mcp-modern-client.js';

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
}

describe('many polls and streams on one address, the service in a process of its own', () => {
  // The attack's clients run in this process; the service runs in another, so the probe times
  // the service and not the test's own parsing.
  let storage: TestStorage;
  let spawned: SpawnedService;
  let base: string;
  before(async () => {
    storage = await createTestStorage();
    spawned = await spawnService({ MAX_STREAMS_PER_ADDRESS: '60', LOG_LEVEL: 'warn' }, storage);
    base = spawned.baseUrl;
  });
  after(async () => {
    spawned.proc.kill('SIGTERM');
    await spawned.exited;
    await storage.drop();
  });

  it('many polls and streams on one address at once, a liveness probe beside them; the stream cap answers -32025', async () => {
    const a = await createAddress(base);
    await result(a.mcpUrl, a.token, 'server/discover'); // the MCP runtime is loaded on the first call
    const probe = startLivenessProbe(base);
    const streams = await Promise.all(Array.from({ length: 60 }, (_, i) => openPush(a.mcpUrl, a.token, { name: NAME, cursor: null }, i)));
    try {
      assert.ok(streams.every((s) => s.status === 200));
      await Promise.all(streams.map((s) => s.next((m) => m.method === 'notifications/events/active')));
      const over = await call(a.mcpUrl, a.token, 'events/stream', { name: NAME, cursor: null });
      assertRpcError(over, 429, -32025);
      assert.equal(over.json.error.data.limit, 'streams');
      // Three waves of 30 polls at once while a delivery fans out to every stream.
      const wave = () => Promise.all(Array.from({ length: 30 }, () => result(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor: '0' })));
      const polls = wave().then(async (w1) => [...w1, ...(await wave()), ...(await wave())]);
      const ev = await deliverOk(base, a, { type: 'fan.out' });
      await Promise.all(streams.map((s) => s.next((m) => isEvent(m) && m.params.eventId === ev.id)));
      const answered = await polls;
      assert.equal(answered.length, 90);
      for (const p of answered) assert.ok(p.events.length <= 1 && p.resultType === 'complete');
    } finally {
      for (const s of streams) s.close();
      const live = await probe.stop();
      assert.deepEqual(live.failures, []);
      assert.ok(live.maxMs < LIVENESS_MS, `healthz answered within ${LIVENESS_MS} ms (slowest ${live.maxMs.toFixed(0)} ms)`);
    }
    // A closed stream frees its place (the server sees the close a moment later).
    let again = await openPush(a.mcpUrl, a.token, { name: NAME, cursor: null });
    for (let i = 0; i < 50 && again.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 50));
      again = await openPush(a.mcpUrl, a.token, { name: NAME, cursor: null });
    }
    assert.equal(again.status, 200);
    again.close();
  });
});
