// kill -9 while workers hold leases (design.md, "Claims"): after a restart on the same data no event
// whose claim ack was answered 200 is claimed again, every other event becomes claimable once its
// lease ends, and none is lost.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Addr, api, createAddress, createTestStorage, range, STORE, sleep, spawnService } from '../helpers.js';

const LEASE_SECONDS = 5;

interface ClaimJson {
  event: { id: string };
  lease_id: string;
  lease_expires_at: string;
}

async function worker(baseUrl: string, a: Addr, n: number, acked: Set<string>, leasesEnd: { last: number }, stop: { now: boolean }): Promise<void> {
  for (let i = 0; !stop.now; i++) {
    try {
      const r = await api(baseUrl, 'POST', `/api/v1/addresses/${a.id}/claims`, { token: a.token, json: { max: 3, lease_seconds: LEASE_SECONDS } });
      if (r.status !== 200) assert.fail(`claim: ${r.status} ${r.text}`);
      for (const c of r.json.claims as ClaimJson[]) {
        leasesEnd.last = Math.max(leasesEnd.last, Date.parse(c.lease_expires_at));
        // Two in three are handled and acked; the rest stay leased when the service dies.
        if ((i + n) % 3 === 0) continue;
        const ack = await api(baseUrl, 'POST', `/api/v1/addresses/${a.id}/claims/${c.lease_id}/ack`, { token: a.token });
        if (ack.status === 200) acked.add(c.event.id);
        else assert.fail(`ack: ${ack.status} ${ack.text}`);
      }
    } catch (e) {
      if (e instanceof assert.AssertionError) throw e;
      return; // the connection died with the process
    }
  }
}

describe(`claims survive a crash (${STORE})`, () => {
  it('SIGKILL with leases held: no acked event redelivered, every unacked one claimable after its lease, none lost', { timeout: 120_000 }, async () => {
    const storage = await createTestStorage();
    let svc = await spawnService({ LOG_LEVEL: 'warn' }, storage);
    try {
      const a = await createAddress(svc.baseUrl);
      for (const chunk of range(0, 3)) await Promise.all(range(1, 100).map((i) => api(svc.baseUrl, 'POST', a.inboxUrl, { json: { data: chunk * 100 + i } })));
      const acked = new Set<string>();
      const leasesEnd = { last: 0 };
      const stop = { now: false };
      const workers = range(1, 8).map((n) => worker(svc.baseUrl, a, n, acked, leasesEnd, stop));
      await sleep(400 + Math.random() * 400);
      const killedAt = Date.now();
      svc.proc.kill('SIGKILL');
      await svc.exited;
      stop.now = true;
      await Promise.all(workers);
      assert.ok(acked.size > 0, 'workers acked events before the kill');

      svc = await spawnService({ LOG_LEVEL: 'warn' }, storage, svc);
      // Wait out every lease handed out before the kill (also those whose answer the kill lost,
      // which end at most LEASE_SECONDS after it), then drain the queue with claims.
      assert.ok(leasesEnd.last <= killedAt + LEASE_SECONDS * 1000);
      await sleep(Math.max(0, killedAt + LEASE_SECONDS * 1000 - Date.now() + 100));
      const redelivered = new Map<string, number>();
      for (;;) {
        const r = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/claims`, { token: a.token, json: { max: 100, lease_seconds: 600 } });
        assert.equal(r.status, 200, r.text);
        if (r.json.claims.length === 0) break;
        for (const c of r.json.claims as ClaimJson[]) redelivered.set(c.event.id, (redelivered.get(c.event.id) ?? 0) + 1);
      }
      const events: { id: string; acknowledged_at?: string }[] = [];
      for (let cursor = 0; ; ) {
        const r = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events?after=${cursor}&limit=100`, { token: a.token });
        events.push(...r.json.events);
        cursor = r.json.next_cursor;
        if (!r.json.has_more) break;
      }
      assert.equal(events.length, 400);
      for (const id of acked) assert.equal(redelivered.has(id), false, `acked event ${id} was claimed again`);
      for (const [id, n] of redelivered) assert.equal(n, 1, `event ${id} claimed once after the restart`);
      for (const e of events) {
        assert.ok(e.acknowledged_at !== undefined || redelivered.has(e.id), `event ${e.id} is neither acknowledged nor claimable: lost`);
        if (redelivered.has(e.id)) assert.equal(e.acknowledged_at, undefined);
      }
      console.log(
        `# claims crash (${STORE}): ${acked.size} acked before the kill, ${redelivered.size} claimable again after it, ` +
          `${events.length - acked.size - redelivered.size} acked with the answer lost; 400 events, none lost`,
      );
    } finally {
      svc.proc.kill('SIGTERM');
      await svc.exited;
      await storage.drop();
    }
  });
});
