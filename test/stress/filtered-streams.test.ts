// Filtered streams and filtered reads over large arrays, against a service in its own process, with
// a /healthz liveness probe beside each attack. Each stream once ran its own filtered scan on every
// delivery to its address (100 streams with distinct filters: 1.03 s a delivery), and a condition
// walked a whole array per event (one GET over arrays: 1.2-4.2 s on SQLite). Now the waiters of an address
// share one read of the new events and run their filters in memory (design.md, "The wakeup hub and
// followers"), and a filter's cost is bounded at parse; an array at a match path is examined up to
// its first MAX_MATCH_ARRAY_MEMBERS members.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { api, createAddress, deliver, range, STORE, sleep } from '../helpers.js';
import { LIVENESS_MS, type LivenessProbe, startLivenessProbe } from '../liveness-probe.js';
import { eventFor, hold, largestFilter, timed, waitForWaiters, withService } from './filtered-waiters-helpers.js';

describe(`filtered streams and filtered reads over large arrays (${STORE})`, () => {
  it('100 streams with distinct filters: deliveries to their address and to another answer under 1 s, and each stream gets its match', {
    timeout: 300_000,
  }, async () => {
    await withService({ MAX_STREAMS_PER_ADDRESS: '100', MAX_STREAMS_PER_CLIENT: '100' }, async (svc) => {
      const a = await createAddress(svc.baseUrl);
      const other = await createAddress(svc.baseUrl);
      let probe: LivenessProbe | undefined;
      const streams: ReturnType<typeof hold>[] = [];
      try {
        for (const v of range(1, 100)) {
          const qs = new URLSearchParams(largestFilter(v));
          streams.push(hold(svc.baseUrl, `/api/v1/addresses/${a.id}/events/stream?${qs}`, a.token));
        }
        await waitForWaiters(svc, 'stream', 100);
        probe = startLivenessProbe(svc.baseUrl);
        let slowest = 0;
        for (const v of range(1, 20)) {
          const [r, ms] = await timed(() => deliver(svc.baseUrl, a, eventFor(v)));
          assert.equal(r.status, 202, r.text);
          const [o, oms] = await timed(() => deliver(svc.baseUrl, other, { type: 'y' }));
          assert.equal(o.status, 202, o.text);
          slowest = Math.max(slowest, ms, oms);
        }
        await sleep(1000);
        const live = await probe.stop();
        probe = undefined;
        for (const s of streams) s.socket.destroy();
        const bodies = await Promise.all(streams.map((s) => s.answer.then((r) => r.body)));
        for (const v of range(1, 20)) assert.match(bodies[v - 1]!, new RegExp(`\\nid: ${v}\\n`), `stream ${v} got its event`);
        for (const v of range(21, 100)) assert.doesNotMatch(bodies[v - 1]!, /\nid: \d+\n/, `stream ${v} matched nothing`);
        console.log(`100 filtered streams: slowest delivery ${slowest.toFixed(0)} ms; healthz max ${live.maxMs.toFixed(0)} ms over ${live.answers} answers`);
        assert.ok(slowest < 1000, `slowest delivery ${slowest.toFixed(0)} ms`);
        assert.ok(live.maxMs < LIVENESS_MS, JSON.stringify(live));
      } finally {
        await probe?.stop();
        for (const s of streams) s.socket.destroy();
      }
    });
  });

  it('filtered reads over events holding arrays of 200,000 members examine the first 100: each answers, /healthz stays under 1 s', {
    timeout: 300_000,
  }, async () => {
    await withService({ MAX_PAYLOAD_BYTES: String(4 * 1024 * 1024) }, async (svc) => {
      const a = await createAddress(svc.baseUrl);
      // ~1.4 MB of JSON each, under MAX_EVENT_BYTES: ten of them, 14 MB, inside one scan's byte bound.
      const members = range(1, 200_000).map((i) => i % 10);
      for (const i of range(1, 10)) assert.equal((await deliver(svc.baseUrl, a, { type: 'x', data: { to: members, i } })).status, 202);
      const probe = startLivenessProbe(svc.baseUrl);
      try {
        // 19 conditions that hold (a member among the first 100) and one that does not: every one is evaluated.
        const params = new URLSearchParams([...range(0, 18).map((i): [string, string] => ['match', `data.to=${i % 10}`]), ['match', 'data.to=100']]);
        const [answers, ms] = await timed(() =>
          Promise.all(range(1, 20).map(() => api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events?${params}`, { token: a.token }))),
        );
        for (const r of answers) assert.deepEqual([r.status, r.json.events.length, r.json.has_more], [200, 0, false], r.text.slice(0, 200));
        const hit = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events?match=data.to=7&match=data.i=3`, { token: a.token });
        assert.deepEqual(
          hit.json.events.map((e: { sequence: number }) => e.sequence),
          [3],
        );
        const live = await probe.stop();
        console.log(
          `20 filtered reads over arrays of 200,000 members: ${ms.toFixed(0)} ms; healthz max ${live.maxMs.toFixed(0)} ms over ${live.answers} answers`,
        );
        assert.ok(live.maxMs < LIVENESS_MS, JSON.stringify(live));
      } finally {
        await probe.stop();
      }
    });
  });
});
