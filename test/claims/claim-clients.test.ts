// Claims through every way in besides HTTP itself: the TypeScript client, the Python module and
// the MCP tools claim_events and settle_claim, against the live service.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ReturnAddress, ReturnAddressError } from '@return-address/client';
import { createAddress, deliver, sleep, startTestService, type TestService } from '../helpers.js';

const python = spawnSync('python3', ['--version'], { encoding: 'utf8' });

describe('claims through the clients and MCP', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(() => svc.stop());

  it('TypeScript client: claim, ack, extend, nack, and lease_lost as a ReturnAddressError', async () => {
    const ra = await ReturnAddress.create({ url: svc.baseUrl });
    const a = { inboxUrl: ra.inboxUrl! } as Parameters<typeof deliver>[1];
    for (const i of [1, 2, 3]) await deliver(svc.baseUrl, a, { type: i === 2 ? 'b' : 'a', data: i });
    const [c1, c2] = await ra.claim({ max: 2, type: 'a' });
    assert.deepEqual([c1!.event.sequence, c2!.event.sequence], [1, 3]);
    assert.ok((await ra.ackClaim(c1!.lease_id)).acknowledged_at);
    assert.ok(Date.parse(await ra.extendClaim(c2!.lease_id, 120)) > Date.now() + 110_000);
    const nacked = await ra.nackClaim(c2!.lease_id, { dead: true, reason: 'poison' });
    assert.equal(nacked.dead_reason, 'poison');
    await assert.rejects(ra.ackClaim(c2!.lease_id), (e: unknown) => e instanceof ReturnAddressError && e.code === 'lease_lost' && e.status === 409);
    const waiting = ra.claim({ wait: 5, type: 'a' });
    await sleep(100);
    await deliver(svc.baseUrl, a, { type: 'a', data: 4 });
    assert.deepEqual(
      (await waiting).map((c) => c.event.sequence),
      [4],
    );
  });

  it('Python module: claim, ack_claim, extend_claim, nack_claim', { skip: python.status === 0 ? false : 'python3 is not installed' }, async () => {
    const a = await createAddress(svc.baseUrl);
    await deliver(svc.baseUrl, a, { data: 1 });
    await deliver(svc.baseUrl, a, { data: 2 });
    const script = `
import json, sys
sys.path.insert(0, "clients/python")
from return_address import ReturnAddress, ReturnAddressError
ra = ReturnAddress(${JSON.stringify(a.id)}, ${JSON.stringify(a.token)}, url=${JSON.stringify(svc.baseUrl)})
c = ra.claim(max=2, lease_seconds=30)
assert [x["event"]["sequence"] for x in c] == [1, 2], c
assert ra.ack_claim(c[0]["lease_id"])["acknowledged_at"]
assert ra.extend_claim(c[1]["lease_id"], 60)
assert ra.nack_claim(c[1]["lease_id"], reason="later")["delivery_count"] == 1
again = ra.claim()
assert again[0]["event"]["sequence"] == 2 and again[0]["delivery_count"] == 2, again
try:
    ra.ack_claim(c[1]["lease_id"])
    raise SystemExit("expected lease_lost")
except ReturnAddressError as e:
    assert e.code == "lease_lost" and e.status == 409, e
ra.nack_claim(again[0]["lease_id"])
seen = []
def handler(event):
    seen.append(event["sequence"])
    if len(seen) == 1:
        raise RuntimeError("first try fails")
ra.consume_claims(handler, lease_seconds=5, idle_seconds=8)  # the retry waits 4 s (third delivery)
assert seen == [2, 2], seen
assert ra.page(after=0)["events"][1]["acknowledged_at"]
print("python claims ok")
`;
    // Not spawnSync: the service runs in this process and must answer meanwhile.
    const { spawn } = await import('node:child_process');
    const proc = spawn('python3', ['-c', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    proc.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const code = await new Promise<number | null>((resolve) => proc.on('close', resolve));
    assert.equal(code, 0, out);
    assert.match(out, /python claims ok/);
  });

  it('MCP: claim_events and settle_claim answer the HTTP shapes; lease_lost is an isError result', async () => {
    const a = await createAddress(svc.baseUrl);
    await deliver(svc.baseUrl, a, { data: 'x' });
    const client = new Client({ name: 'claims-test', version: '0.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(a.mcpUrl), { requestInit: { headers: { Authorization: `Bearer ${a.token}` } } }));
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(tools.includes('claim_events') && tools.includes('settle_claim'), tools.join());
      const call = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as CallToolResult;
      const claimed = await call('claim_events', { max: 5 });
      assert.notEqual(claimed.isError, true, JSON.stringify(claimed.content));
      const c = (claimed.structuredContent as { claims: { lease_id: string; delivery_count: number; event: { sequence: number } }[] }).claims;
      assert.deepEqual(
        c.map((x) => [x.event.sequence, x.delivery_count]),
        [[1, 1]],
      );
      const extended = await call('settle_claim', { lease_id: c[0]!.lease_id, action: 'extend', lease_seconds: 30 });
      assert.ok((extended.structuredContent as { lease_expires_at: string }).lease_expires_at);
      const nacked = await call('settle_claim', { lease_id: c[0]!.lease_id, action: 'nack', reason: 'retry' });
      assert.equal((nacked.structuredContent as { event: { delivery_count: number } }).event.delivery_count, 1);
      const lost = await call('settle_claim', { lease_id: c[0]!.lease_id, action: 'ack' });
      assert.equal(lost.isError, true);
      assert.match(JSON.stringify(lost.content), /lease_lost/);
      const misplaced = await call('settle_claim', { lease_id: c[0]!.lease_id, action: 'ack', delay_seconds: 5 });
      assert.equal(misplaced.isError, true);
      assert.match(JSON.stringify(misplaced.content), /invalid_request/);
      const bad = await call('claim_events', { max: 0 });
      assert.equal(bad.isError, true);
      const again = await call('claim_events', {});
      const c2 = (again.structuredContent as { claims: { lease_id: string; delivery_count: number }[] }).claims;
      assert.equal(c2[0]!.delivery_count, 2);
      const acked = await call('settle_claim', { lease_id: c2[0]!.lease_id, action: 'ack' });
      assert.ok((acked.structuredContent as { event: { acknowledged_at: string } }).event.acknowledged_at);
    } finally {
      await client.close();
    }
  });
});
