// An approval flood on one address (design.md, "Approvals": bounded like the queue): 1,000 creates of
// ~15.8 KB each with a 1 MiB byte quota. Before the bound, all 1,000 were stored in 3.1 s and the
// address held 8.4 MB. Now the creates past the quota (and past MAX_PENDING_APPROVALS) are refused
// 429, the event loop never stalls 1 s, and /healthz and a delivery to another address answer within 2 s.
import assert from 'node:assert/strict';
import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import { api, createAddress, deliver, range, STORE, startTestService, type TestService } from '../helpers.js';
import { startLivenessProbe } from '../liveness-probe.js';

const QUOTA = 1024 * 1024;

/** ~15.8 KB as stored: the longest question and details, five options, ten select fields. */
function largeApproval(n: number) {
  return {
    question: `${n} `.padEnd(500, 'q'),
    details: 'd'.repeat(10_000),
    options: range(1, 5).map((i) => ({ id: `option_${i}`.padEnd(40, 'o'), label: 'L'.repeat(100) })),
    fields: range(1, 10).map((i) => ({ name: `field_${i}`.padEnd(40, 'f'), label: 'F'.repeat(200), type: 'select', choices: ['c'.repeat(100)] })),
  };
}

describe(`approval flood: 1,000 × 15.8 KB on one address with a 1 MiB quota (${STORE})`, () => {
  let svc: TestService;
  before(async () => {
    // The cap is raised past what the quota lets in, so the byte quota is what refuses.
    svc = await startTestService({ MAX_BYTES_PER_ADDRESS: String(QUOTA), MAX_PENDING_APPROVALS: '1000' });
  });
  after(async () => {
    await svc?.stop();
  });

  it('is refused past the quota; no 1 s stall, /healthz and a delivery elsewhere under 2 s', { timeout: 600_000 }, async () => {
    const a = await createAddress(svc.baseUrl);
    const other = await createAddress(svc.baseUrl);
    const probe = startLivenessProbe(svc.baseUrl);
    // The service runs in this process: the event loop's longest stall tells blocking work from a busy machine.
    const stalls = monitorEventLoopDelay({ resolution: 10 });
    stalls.enable();
    const started = performance.now();
    let done = false;
    const delivering = (async () => {
      const times: number[] = [];
      while (!done) {
        const t = performance.now();
        const r = await deliver(svc.baseUrl, other, { type: 'elsewhere', data: { n: times.length } });
        assert.equal(r.status, 202, r.text);
        times.push(performance.now() - t);
        await new Promise((r) => setTimeout(r, 50));
      }
      return times;
    })();
    const statuses: number[] = [];
    // 20 clients at once, 50 creates each.
    await Promise.all(
      range(0, 19).map(async (c) => {
        for (const i of range(1, 50)) {
          const r = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/approvals`, { token: a.token, json: largeApproval(c * 50 + i) });
          assert.ok(r.status === 201 || (r.status === 429 && r.json.error.code === 'queue_full'), `${r.status} ${r.text.slice(0, 200)}`);
          statuses.push(r.status);
        }
      }),
    );
    const ms = performance.now() - started;
    done = true;
    const times = await delivering;
    const health = await probe.stop();
    stalls.disable();
    const created = statuses.filter((s) => s === 201).length;
    console.log(
      `# ${STORE}: ${created} of 1000 created, ${1000 - created} refused, in ${Math.round(ms)} ms; /healthz max ${Math.round(health.maxMs)} ms over ${health.answers} answers; deliveries elsewhere max ${Math.round(Math.max(...times))} ms over ${times.length}; event loop stalls max ${Math.round(stalls.max / 1e6)} ms, p99 ${Math.round(stalls.percentile(99) / 1e6)} ms; load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
    // 1 MiB / ~15.8 KB: at most 66 fit.
    assert.ok(created > 0 && created <= Math.floor(QUOTA / 15_000), `${created} created`);
    assert.deepEqual(health.failures, []);
    // What the flood must not do is stall the service's event loop: that is held to 1 s. The answers'
    // wall time also counts the test's own load and the disk (a delivery elsewhere took 1,182 ms once
    // in CI beside the other stores' stress run, with the loop's stalls well under it): held to 2 s.
    assert.ok(stalls.max / 1e6 < 1000, `the event loop stalled ${Math.round(stalls.max / 1e6)} ms`);
    assert.ok(health.maxMs < 2000, `/healthz took ${Math.round(health.maxMs)} ms`);
    assert.ok(Math.max(...times) < 2000, `a delivery elsewhere took ${Math.round(Math.max(...times))} ms`);
    // The address itself still takes a small delivery in what is left, and refuses one that does not fit.
    assert.equal((await deliver(svc.baseUrl, a, { type: 'small' })).status, 202);
  });
});
