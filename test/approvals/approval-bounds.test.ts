// Approvals are bounded like the queue (design.md, "Approvals"), over real sockets on the configured
// store: past MAX_PENDING_APPROVALS a create is 429 too_many_approvals in the documented shape,
// saying the fix, also when many creates race; an approval's bytes count toward
// MAX_BYTES_PER_ADDRESS (429 queue_full); /healthz answers within 1 s beside both attacks, and every
// answer is what /openapi.json declares.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Addr, api, createAddress, deliver, range, STORE, startTestService, type TestService } from '../helpers.js';
import { LIVENESS_MS, startLivenessProbe } from '../liveness-probe.js';
import { OpenApiValidator } from '../openapi-validator.js';

const MAX_PENDING = 5;
const QUOTA = 64 * 1024;

/** An approval of ~15.8 KB as stored: the longest question and details, five options, ten select fields. */
function largeApproval(n: number) {
  return {
    question: `${n} `.padEnd(500, 'q'),
    details: 'd'.repeat(10_000),
    options: range(1, 5).map((i) => ({ id: `option_${i}`.padEnd(40, 'o'), label: 'L'.repeat(100) })),
    fields: range(1, 10).map((i) => ({ name: `field_${i}`.padEnd(40, 'f'), label: 'F'.repeat(200), type: 'select', choices: ['c'.repeat(100)] })),
  };
}

describe(`approvals inside the address's bounds (${STORE})`, () => {
  let svc: TestService;
  let v: OpenApiValidator;
  before(async () => {
    svc = await startTestService({ MAX_PENDING_APPROVALS: String(MAX_PENDING), MAX_BYTES_PER_ADDRESS: String(QUOTA) });
    v = new OpenApiValidator((await api(svc.baseUrl, 'GET', '/openapi.json')).json);
  });
  after(async () => {
    await svc?.stop();
  });

  const create = (a: Addr, json: unknown) => api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/approvals`, { token: a.token, json });
  /** Checked against /openapi.json after the probe stopped: compiling the schemas holds this process's event loop, which serves /healthz too. */
  const declared = (a: Addr, answers: Awaited<ReturnType<typeof create>>[]) => {
    for (const r of answers) v.check('POST', `/api/v1/addresses/${a.id}/approvals`, r);
  };

  it('20 creates at once: exactly MAX_PENDING_APPROVALS are stored, the rest 429 too_many_approvals saying the fix; a cancel frees a place', async () => {
    const a = await createAddress(svc.baseUrl);
    const probe = startLivenessProbe(svc.baseUrl);
    const answers = await Promise.all(range(1, 20).map((i) => create(a, { question: `Approve ${i}?` })));
    const health = await probe.stop();
    assert.deepEqual(health.failures, []);
    assert.ok(health.maxMs < LIVENESS_MS, `/healthz took ${Math.round(health.maxMs)} ms beside the creates`);
    declared(a, answers);
    const created = answers.filter((r) => r.status === 201);
    assert.equal(created.length, MAX_PENDING);
    for (const r of answers.filter((r) => r.status !== 201)) {
      assert.equal(r.status, 429, r.text);
      assert.equal(r.json.error.code, 'too_many_approvals');
      assert.match(r.json.error.message, new RegExp(`already holds ${MAX_PENDING} pending approvals \\(MAX_PENDING_APPROVALS\\); cancel one`));
      assert.ok(Number(r.headers.get('retry-after')) > 0, 'Retry-After');
    }
    const cancelled = await api(svc.baseUrl, 'DELETE', `/api/v1/addresses/${a.id}/approvals/${created[0]!.json.approval.id}`, { token: a.token });
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.equal((await create(a, { question: 'One more?' })).status, 201);
    assert.equal((await create(a, { question: 'And another?' })).status, 429);
  });

  it("approvals' bytes count toward MAX_BYTES_PER_ADDRESS: past the quota 429 queue_full naming it; deliveries share what is left", async () => {
    const a = await createAddress(svc.baseUrl);
    const probe = startLivenessProbe(svc.baseUrl);
    const answers = [];
    for (const n of range(1, MAX_PENDING)) answers.push(await create(a, largeApproval(n)));
    const health = await probe.stop();
    assert.deepEqual(health.failures, []);
    assert.ok(health.maxMs < LIVENESS_MS, `/healthz took ${Math.round(health.maxMs)} ms`);
    declared(a, answers);
    // ~15.8 KB each: four fit in 64 KiB, the fifth does not.
    assert.deepEqual(
      answers.map((r) => r.status),
      [201, 201, 201, 201, 429],
    );
    const refused = answers[4]!;
    assert.equal(refused.json.error.code, 'queue_full');
    assert.match(refused.json.error.message, /MAX_BYTES_PER_ADDRESS, 65536 bytes\) is full: its events and approvals hold it/);
    // What the approvals left (about 2 KB) takes a small delivery, not a 4 KB one.
    assert.equal((await deliver(svc.baseUrl, a, { type: 'small', data: { n: 1 } })).status, 202);
    const big = await deliver(svc.baseUrl, a, { type: 'big', data: { pad: 'x'.repeat(4096) } });
    assert.equal(big.status, 429, big.text);
    assert.equal(big.json.error.code, 'queue_full');
  });
});
