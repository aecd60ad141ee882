// A long fuzzing run against the built service in its own process: every answer documented, and
// its memory stays bounded (no growth proportional to the hostile traffic it has seen).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { checkAnswer, closeAgent, requestArb } from '../fuzz-requests.js';
import { api, createAddress, createTestStorage, deliver, STORE, spawnService } from '../helpers.js';

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

describe(`fuzz soak (${STORE})`, () => {
  it('thousands of hostile requests: documented answers, bounded memory', { timeout: 300_000 }, async () => {
    const storage = await createTestStorage();
    const svc = await spawnService({ LOG_LEVEL: 'warn', CREATE_RATE_LIMIT: '1000000' }, storage);
    try {
      const a = await createAddress(svc.baseUrl);
      const ev = (await deliver(svc.baseUrl, a, {})).json.event;
      const target = { port: Number(new URL(svc.baseUrl).port), addressId: a.id, token: a.token, secret: a.secret, eventId: ev.id };
      const pid = svc.proc.pid!;
      const run = (numRuns: number, seed: number) =>
        fc.assert(
          fc.asyncProperty(requestArb(target), (r) => checkAnswer(target.port, r)),
          { numRuns, seed },
        );
      await run(1000, 1); // warm-up: JIT, caches, SQLite page cache
      const before = rssMb(pid);
      await run(Number(process.env.SOAK_RUNS ?? 6000), 2);
      const afterRss = rssMb(pid);
      console.log(`# fuzz soak (${STORE}): RSS ${before.toFixed(0)} MB after warm-up, ${afterRss.toFixed(0)} MB after the soak`);
      assert.ok(afterRss < before + 150, `RSS grew from ${before.toFixed(0)} to ${afterRss.toFixed(0)} MB`);
      assert.equal((await api(svc.baseUrl, 'GET', '/readyz')).status, 200);
    } finally {
      closeAgent();
      svc.proc.kill('SIGTERM');
      await svc.exited;
      await storage.drop();
    }
  });
});
