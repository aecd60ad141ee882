// Property-based fuzzing of every endpoint (random JSON shapes, deep nesting, huge strings, NUL
// and invalid UTF-8, wrong content types, odd headers, query values of every type, hostile path
// segments, bodies over the limit): every answer is documented, never a 5xx. The requests go through
// Fastify's inject (the whole app over a real store, no socket), so the run costs the routes' work,
// not a service's boot and the kernel's; the same property over a real socket, where a reset would
// show, is the stress suite's fuzz soak (test/stress/fuzz-soak.test.ts).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { checkAnswer, requestArb, type Target } from '../fuzz-requests.js';
import { api, createAddress, deliver } from '../helpers.js';
import { type InjectedService, startInjectedService } from '../inject.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);

describe('fuzzing every endpoint', () => {
  let svc: InjectedService;
  let target: Target;
  before(async () => {
    svc = await startInjectedService({ CREATE_RATE_LIMIT: '1000000' });
    const a = await createAddress(svc.baseUrl);
    const ev = (await deliver(svc.baseUrl, a, {})).json.event;
    target = { port: svc.app, addressId: a.id, token: a.token, secret: a.secret, eventId: ev.id };
  });
  after(async () => {
    await svc.stop();
  });

  it(`${RUNS} random hostile requests all get documented answers`, { timeout: 300_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(requestArb(target), (r) => checkAnswer(target.port, r)),
      { numRuns: RUNS, seed: Number(process.env.FUZZ_SEED ?? Date.now() % 100000), verbose: 1 },
    );
    // The service is still whole afterwards.
    assert.equal((await api(svc.baseUrl, 'GET', '/readyz')).status, 200);
  });
});
