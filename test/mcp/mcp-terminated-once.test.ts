// A subscription is told `terminated` once, even when its runner ends while a sweep's lease is under
// way (design.md, "Push subscriptions"). The sweep's rows were read before the address went; a
// runner restarted from them found the row gone and sent a second terminated body (a CI run on
// PostgreSQL saw two, for a deleted address, with the lease's second query slow under load). The
// test holds a sweep's answer at the store port until the address is deleted and the first runner
// has said so, then lets the sweep go on and waits until every runner, and any body it sends, is over.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { api, createAddress, STORE, startTestService } from '../helpers.js';
import { startLivenessProbe } from '../liveness-probe.js';
import { until } from '../push/receiver.js';
import { assertControl, delivered, isControl, SECRET, send, startHook, subscribeOn } from './mcp-hook.js';

describe(`MCP terminated body: once per subscription (${STORE})`, () => {
  it('a runner that ends while a sweep leases is not started again from that sweep’s rows: one terminated', async () => {
    // No timed sweep: the test starts each one.
    const svc = await startTestService({ PUSH_ALLOW_PRIVATE: 'true', PUSH_SWEEP_MS: '600000', PUSH_TIMEOUT_MS: '5000' });
    const probe = startLivenessProbe(svc.baseUrl);
    const rx = await startHook(() => [SECRET]);
    try {
      const a = await createAddress(svc.baseUrl);
      const sub = await subscribeOn(svc, a, rx.url, SECRET);
      await send(svc.baseUrl, a, 1);
      await until(() => delivered(rx).length === 1, 20_000, 'event 1 delivered');
      const { worker, subscriptions } = svc.running.push;
      const leases = subscriptions.subscriptions;
      const lease = leases.leaseSubscriptions.bind(leases);
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      let calls = 0;
      let held = false;
      leases.leaseSubscriptions = async (...args) => {
        const n = ++calls;
        const rows = await lease(...args);
        if (n === 1) {
          held = rows.some((r) => r.id === sub.id);
          await gate;
        }
        return rows;
      };
      worker.sweepSoon();
      await until(() => held, 20_000, 'a sweep leased the subscription (its answer held)');
      assert.equal((await api(svc.baseUrl, 'DELETE', `/api/v1/addresses/${a.id}`, { token: a.token })).status, 204);
      await until(() => rx.posts.some((p) => isControl(p, 'terminated')), 20_000, 'the first runner said terminated');
      await until(() => worker.running === 0, 20_000, 'the first runner over');
      release();
      // The held sweep goes on with its rows; a sweep asked for now starts after it has handled them.
      worker.sweepSoon();
      await until(() => calls >= 2, 20_000, 'the held sweep over');
      await until(() => worker.running === 0, 20_000, 'any runner it started over, with what it sent');
      const ended = rx.posts.filter((p) => isControl(p, 'terminated'));
      assert.equal(ended.length, 1, `terminated bodies: ${ended.length}`);
      assert.equal(assertControl(ended[0]!, 'terminated', SECRET, sub.id).error.data.reason, 'address_gone');
      assert.equal(worker.active, 0);
      assert.deepEqual((await probe.stop()).failures, []);
    } finally {
      await probe.stop();
      await rx.close();
      await svc.stop();
    }
  });
});
