// MCP readers see no headers, so the store epoch and the address's last sequence travel in `_meta`
// ("io.return-address/epoch", "io.return-address/last-sequence") of every tool result that hands out
// events or cursors, of events/poll, and of events/stream's notifications; an Events cursor carries
// the epoch, and one from another epoch (given before a restore, which reuses sequences) is answered
// from the start of the queue with truncated: true instead of skipping what came after the restore.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { api, createAddress, deliver, listEvents, STORE, startTestService, type TestService } from '../helpers.js';
import { LIVENESS_MS, startLivenessProbe } from '../liveness-probe.js';
import { ACCEPT, call, isEvent, openPush, result } from '../mcp/mcp-modern-client.js';

const NAME = 'return_address.event';
const EPOCH = 'io.return-address/epoch';
const LAST = 'io.return-address/last-sequence';

describe(`store epoch in MCP results (${STORE})`, () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(async () => {
    await svc.stop();
  });

  it('tool results that carry events say the epoch and the last sequence in _meta; others do not', async () => {
    const a = await createAddress(svc.baseUrl);
    for (let i = 1; i <= 3; i++) assert.equal((await deliver(svc.baseUrl, a, { data: i })).status, 202);
    const epoch = (await listEvents(svc.baseUrl, a)).headers.get('return-address-epoch');
    assert.match(epoch ?? '', /^[0-9a-f]{32}$/);

    const listed = await result(a.mcpUrl, a.token, 'tools/call', { name: 'list_events', arguments: { limit: 1 } });
    assert.equal(listed.structuredContent.events.length, 1);
    assert.deepEqual(listed._meta, { [EPOCH]: epoch, [LAST]: 3 }, 'the address, not the page');
    assert.deepEqual(Object.keys(listed.structuredContent).sort(), ['events', 'has_more', 'next_cursor'], 'the page keeps its shape');

    const ahead = await result(a.mcpUrl, a.token, 'tools/call', { name: 'wait_for_event', arguments: { after: 10, timeout: 0 } });
    assert.deepEqual(ahead.structuredContent, { event: null, next_cursor: 10 });
    assert.equal(ahead._meta[LAST], 3, 'a cursor above the last sequence is ahead, not waiting');

    const claimed = await result(a.mcpUrl, a.token, 'tools/call', { name: 'claim_events', arguments: { max: 1 } });
    assert.equal(claimed.isError, undefined, JSON.stringify(claimed.content));
    assert.equal(claimed._meta[EPOCH], epoch);
    const acked = await result(a.mcpUrl, a.token, 'tools/call', { name: 'ack_event', arguments: { event_id: listed.structuredContent.events[0].id } });
    assert.equal(acked._meta[EPOCH], epoch);

    const address = await result(a.mcpUrl, a.token, 'tools/call', { name: 'get_address', arguments: {} });
    assert.equal(address._meta?.[EPOCH], undefined, 'no events, no epoch');

    // Revision 2025-11-25 (the SDK's transport) says it too.
    const legacy = await api('', 'POST', a.mcpUrl, {
      token: a.token,
      headers: { ...ACCEPT, 'mcp-protocol-version': '2025-11-25' },
      json: { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'list_events', arguments: {} } },
    });
    assert.equal(legacy.status, 200, legacy.text);
    assert.deepEqual(legacy.json.result._meta, { [EPOCH]: epoch, [LAST]: 3 });
  });

  it('events/poll: the cursor carries the epoch, _meta says it, and a cursor of another epoch starts again, truncated', async () => {
    const a = await createAddress(svc.baseUrl);
    const ids: string[] = [];
    for (let i = 1; i <= 3; i++) ids.push((await deliver(svc.baseUrl, a, { data: i })).json.event.id);
    const epoch = (await listEvents(svc.baseUrl, a)).headers.get('return-address-epoch');

    const p = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor: null });
    assert.equal(p.cursor, `3@${epoch}`);
    assert.equal(p.truncated, false);
    assert.deepEqual(p._meta, { [EPOCH]: epoch, [LAST]: 3 });

    // Resumed in the same epoch: nothing skipped, nothing again.
    const same = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor: `1@${epoch}` });
    assert.deepEqual(
      same.events.map((e: { eventId: string }) => e.eventId),
      ids.slice(1),
    );
    assert.equal(same.truncated, false);

    // A cursor from before a restore (another epoch): from the start, truncated.
    const stale = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor: `2@${'f'.repeat(32)}` });
    assert.deepEqual(
      stale.events.map((e: { eventId: string }) => e.eventId),
      ids,
    );
    assert.equal(stale.truncated, true);
    assert.equal(stale.cursor, `3@${epoch}`, 'the new cursor is of this epoch');
    // A stale cursor far past the queue is the same: not an empty page that hides the reuse.
    const far = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor: `99@${'f'.repeat(32)}` });
    assert.equal(far.events.length, 3);
    assert.equal(far.truncated, true);
    // A bare sequence (GET …/events's cursor) is still taken, unchecked.
    const bare = await result(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor: '2' });
    assert.deepEqual([bare.events.length, bare.truncated], [1, false]);
  });

  it('events/stream: active says the epoch and last sequence, events and heartbeats the epoch; a stale cursor replays from the start', async () => {
    const a = await createAddress(svc.baseUrl);
    const ids: string[] = [];
    for (let i = 1; i <= 2; i++) ids.push((await deliver(svc.baseUrl, a, { data: i })).json.event.id);
    const epoch = (await listEvents(svc.baseUrl, a)).headers.get('return-address-epoch');
    const s = await openPush(a.mcpUrl, a.token, { name: NAME, cursor: `2@${'e'.repeat(32)}`, heartbeatMs: 1000 });
    try {
      assert.equal(s.status, 200);
      const active = await s.next((m) => m.method === 'notifications/events/active', 5000);
      assert.equal(active.params.cursor, `0@${epoch}`);
      assert.equal(active.params.truncated, true);
      assert.equal(active.params._meta[EPOCH], epoch);
      assert.equal(active.params._meta[LAST], 2);
      assert.equal(active.params._meta['io.modelcontextprotocol/subscriptionId'], 'sub-1');
      await s.next((m) => isEvent(m) && m.params.eventId === ids[1], 5000);
      const events = s.messages.filter(isEvent);
      assert.deepEqual(
        events.map((m) => [m.params.eventId, m.params.cursor, m.params._meta[EPOCH]]),
        [
          [ids[0], `1@${epoch}`, epoch],
          [ids[1], `2@${epoch}`, epoch],
        ],
      );
      const hb = await s.next((m) => m.method === 'notifications/events/heartbeat', 5000);
      assert.equal(hb.params.cursor, `2@${epoch}`);
      assert.equal(hb.params._meta[EPOCH], epoch);
    } finally {
      s.close();
    }
  });

  it('attack: cursors that are not ours are refused as invalid params, and the service stays live', async () => {
    const a = await createAddress(svc.baseUrl);
    const probe = startLivenessProbe(svc.baseUrl);
    for (const cursor of ['1@', '@abc', '1@a b', `1@${'a'.repeat(65)}`, '1@x@y', `1@${'\u0000'}`]) {
      const r = await call(a.mcpUrl, a.token, 'events/poll', { name: NAME, cursor });
      assert.equal(r.status, 200, cursor);
      assert.equal(r.json.error?.code, -32602, `${JSON.stringify(cursor)}: ${r.text.slice(0, 200)}`);
      assert.match(r.json.error.message, /params\.cursor/);
    }
    const live = await probe.stop();
    assert.deepEqual(live.failures, []);
    assert.ok(live.maxMs < LIVENESS_MS, `healthz answered within ${LIVENESS_MS} ms (slowest ${live.maxMs} ms)`);
  });
});
