// kill -9 under load (design.md, "Durability: group commit"): every delivery answered 2xx before the crash is there after
// a restart on the same data, sequences are 1..max with no gap, delivery resumes at max+1, and a
// client retrying its key after the crash gets the original event.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Addr, api, createAddress, createTestStorage, range, STORE, sleep, spawnService } from '../helpers.js';

const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 3);
const LOOPS = 8;

interface Acked {
  seq: number;
  id: string;
  key: string;
}

async function deliveryLoop(baseUrl: string, a: Addr, loop: number, acked: Acked[], stop: { now: boolean }): Promise<void> {
  for (let i = 0; !stop.now; i++) {
    const key = `r-${loop}-${i}-${Math.random().toString(36).slice(2)}`;
    try {
      const r = await api(baseUrl, 'POST', a.inboxUrl, { json: { data: { loop, i } }, headers: { 'idempotency-key': key } });
      if (r.status === 202) acked.push({ seq: r.json.event.sequence, id: r.json.event.id, key });
      else assert.fail(`unexpected ${r.status} ${r.text}`);
    } catch (e) {
      if (e instanceof assert.AssertionError) throw e;
      return; // the connection died with the process: this delivery was never answered
    }
  }
}

describe(`crash recovery (${STORE})`, () => {
  it(`${ROUNDS} rounds of SIGKILL under ${LOOPS} parallel delivery loops lose nothing answered`, { timeout: 180_000 }, async () => {
    const storage = await createTestStorage();
    let svc = await spawnService({ LOG_LEVEL: 'warn' }, storage);
    const a = await createAddress(svc.baseUrl);
    const acked: Acked[] = [];
    try {
      for (let round = 1; round <= ROUNDS; round++) {
        const stop = { now: false };
        const loops = range(1, LOOPS).map((l) => deliveryLoop(svc.baseUrl, a, l, acked, stop));
        await sleep(700 + Math.random() * 600);
        svc.proc.kill('SIGKILL');
        await svc.exited;
        stop.now = true;
        await Promise.all(loops);

        svc = await spawnService({ LOG_LEVEL: 'warn' }, storage, svc); // same ports: the handed-out URLs stay valid
        const seen = new Map<number, string>();
        for (let cursor = 0; ; ) {
          const r = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events?after=${cursor}&limit=100`, { token: a.token });
          assert.equal(r.status, 200, r.text);
          for (const e of r.json.events) seen.set(e.sequence, e.id);
          cursor = r.json.next_cursor;
          if (!r.json.has_more) break;
        }
        const max = Math.max(0, ...seen.keys());
        assert.deepEqual([...seen.keys()], range(1, max), `round ${round}: sequences 1..${max} without a gap`);
        for (const x of acked) assert.equal(seen.get(x.seq), x.id, `round ${round}: answered event ${x.seq} survived`);
        assert.ok(acked.length > 0, 'the load got answers before the kill');

        const retry = acked[acked.length - 1]!;
        const again = await api(svc.baseUrl, 'POST', a.inboxUrl, { json: {}, headers: { 'idempotency-key': retry.key } });
        assert.equal(again.status, 200, 'a retry after the crash is a duplicate');
        assert.equal(again.json.event.id, retry.id);
        const next = await api(svc.baseUrl, 'POST', a.inboxUrl, { json: { data: 'after restart' } });
        assert.equal(next.json.event.sequence, max + 1, 'delivery resumes at max+1');
        acked.push({ seq: next.json.event.sequence, id: next.json.event.id, key: '' });
      }
      console.log(`# crash recovery (${STORE}): ${ROUNDS} kills, ${acked.length} answered deliveries, all present`);
    } finally {
      svc.proc.kill('SIGTERM');
      await svc.exited;
      await storage.drop();
    }
  });
});
