// Many filtered waiters on one address, against a service in its own process, with a /healthz
// liveness probe beside each attack. Each waiter once ran its own filtered scan on every delivery
// to its address (~20 ms with the largest filter, synchronously on SQLite): 300 long-polls held
// /healthz 4.1 s and a delivery 6.6 s; 1,000 held them 30 s and 54 s. Now the waiters of an address
// share one read of the new events and run their filters in memory (design.md, "The wakeup hub and
// followers"), and a filter's cost is bounded at parse; an array at a match path is examined up to
// its first MAX_MATCH_ARRAY_MEMBERS members.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createAddress, deliver, range, STORE } from '../helpers.js';
import { LIVENESS_MS, type LivenessProbe, startLivenessProbe } from '../liveness-probe.js';
import { eventFor, hold, largestFilter, timed, waitForWaiters, withService } from './filtered-waiters-helpers.js';

describe(`1,000 filtered long-polls on one address (${STORE})`, () => {
  it('1,000 long-polls with the largest filter: a delivery to their address and one to another answer under 1 s, and /healthz stays under 1 s', {
    timeout: 300_000,
  }, async () => {
    await withService({}, async (svc) => {
      const a = await createAddress(svc.baseUrl);
      const other = await createAddress(svc.baseUrl);
      let probe: LivenessProbe | undefined;
      const polls: ReturnType<typeof hold>[] = [];
      try {
        // Half wait for variant 1, half for variant 2: a delivery matching variant 1 answers exactly the first half.
        for (const i of range(1, 1000)) {
          const qs = new URLSearchParams([...largestFilter(i <= 500 ? 1 : 2), ['wait', '25']]);
          polls.push(hold(svc.baseUrl, `/api/v1/addresses/${a.id}/events?${qs}`, a.token));
        }
        await waitForWaiters(svc, 'long_poll', 1000);
        probe = startLivenessProbe(svc.baseUrl);
        const times: Record<string, number> = {};
        // Non-matching deliveries to their address wake all 1,000 and answer none.
        for (const round of range(1, 3)) {
          const [r, ms] = await timed(() => deliver(svc.baseUrl, a, eventFor(null)));
          assert.equal(r.status, 202, r.text);
          times[`own address, round ${round}`] = ms;
          const [o, oms] = await timed(() => deliver(svc.baseUrl, other, { type: 'y' }));
          assert.equal(o.status, 202, o.text);
          times[`another address, round ${round}`] = oms;
        }
        const [hit, hitMs] = await timed(() => deliver(svc.baseUrl, a, eventFor(1)));
        assert.equal(hit.status, 202, hit.text);
        times['the matching delivery'] = hitMs;
        const answered = await Promise.all(polls.slice(0, 500).map((p) => p.answer));
        for (const r of answered) {
          assert.equal(r.status, 200);
          assert.match(r.body, /"sequence":4/);
        }
        const [late, lateMs] = await timed(() => deliver(svc.baseUrl, other, { type: 'y' }));
        assert.equal(late.status, 202);
        times['another address, after'] = lateMs;
        const live = await probe.stop();
        probe = undefined;
        console.log(
          `1,000 filtered long-polls: delivery times ${JSON.stringify(Object.fromEntries(Object.entries(times).map(([k, v]) => [k, Math.round(v)])))}; healthz max ${live.maxMs.toFixed(0)} ms over ${live.answers} answers`,
        );
        for (const [what, ms] of Object.entries(times)) assert.ok(ms < 1000, `${what}: ${Math.round(ms)} ms`);
        assert.ok(live.maxMs < LIVENESS_MS, JSON.stringify(live));
      } finally {
        await probe?.stop();
        for (const p of polls) p.socket.destroy();
      }
    });
  });
});
