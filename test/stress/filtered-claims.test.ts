// Waiting filtered claims over a large queue, against a service in its own process, with a /healthz
// liveness probe beside them. Each waiting claim once rescanned every open event of its address on
// every delivery (8 claims over 40 MB: /healthz 1.5-3.1 s per delivery); now a filtered claim walks
// the open events in windows from a cursor and, after a wake, goes on from where it got to
// (design.md, "Claims"), each window after a turn of the event loop (SQLite answers at once: 8
// claims walking 40 MB in one turn each held deliveries beside them 0.7-1.6 s).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { api, createAddress, deliver, range, STORE, sleep } from '../helpers.js';
import { LIVENESS_MS, startLivenessProbe } from '../liveness-probe.js';
import { timed, withService } from './filtered-waiters-helpers.js';

describe(`waiting filtered claims over a large queue (${STORE})`, () => {
  it('8 waiting filtered claims over 40 MB of open events: deliveries beside them answer under 1 s, and the match is claimed once', {
    timeout: 300_000,
  }, async () => {
    await withService({}, async (svc) => {
      const a = await createAddress(svc.baseUrl);
      const other = await createAddress(svc.baseUrl);
      const pad = 'p'.repeat(100_000);
      for (let i = 0; i < 400; i += 20) {
        const rs = await Promise.all(range(1, 20).map(() => deliver(svc.baseUrl, a, { type: 'job', data: { pad, wanted: false } })));
        for (const r of rs) assert.equal(r.status, 202, r.text);
      }
      const probe = startLivenessProbe(svc.baseUrl);
      let slowest = 0;
      try {
        const claims = range(1, 8).map(() =>
          api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/claims`, { token: a.token, json: { max: 1, wait: 25, match: ['data.wanted=true'] } }),
        );
        for (const round of range(1, 5)) {
          const [own, ms] = await timed(() => deliver(svc.baseUrl, a, { type: 'job', data: { wanted: false, round } }));
          assert.equal(own.status, 202, own.text);
          const [o, oms] = await timed(() => deliver(svc.baseUrl, other, { type: 'y' }));
          assert.equal(o.status, 202, o.text);
          slowest = Math.max(slowest, ms, oms);
          await sleep(100);
        }
        const [hit, hitMs] = await timed(() => deliver(svc.baseUrl, a, { type: 'job', data: { wanted: true } }));
        assert.equal(hit.status, 202, hit.text);
        slowest = Math.max(slowest, hitMs);
        const answered = await Promise.all(claims);
        for (const r of answered) assert.equal(r.status, 200, r.text);
        // Exactly one of the eight leased the match; the other seven answered nothing at their deadline.
        assert.deepEqual(
          answered.flatMap((r) => r.json.claims.map((c: { event: { sequence: number } }) => c.event.sequence)),
          [hit.json.event.sequence],
        );
        const live = await probe.stop();
        console.log(
          `8 waiting filtered claims over 40 MB: slowest delivery ${slowest.toFixed(0)} ms; healthz max ${live.maxMs.toFixed(0)} ms over ${live.answers} answers`,
        );
        assert.ok(slowest < 1000, `slowest delivery ${slowest.toFixed(0)} ms`);
        assert.ok(live.maxMs < LIVENESS_MS, JSON.stringify(live));
      } finally {
        await probe.stop();
      }
    });
  });
});
