// Untrusted input at the sizes an adversarial run used, against a service in its own process (its RSS read
// from /proc), with a /healthz liveness probe beside each attack:
// - 150 capture uploads of 24 MiB that pause before their last byte held +3.2 GB for 30 s; now the
//   bytes being received share MAX_INFLIGHT_CAPTURE_BYTES and the rest are answered 503 at once;
// - a Stripe-Signature of 2,000 v1 entries over a 25 MiB body held the event loop for a minute (the
//   HMAC was recomputed per entry); now it is computed once.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { api, createTestStorage, STORE, sleep, spawnService } from '../helpers.js';
import { type LivenessProbe, startLivenessProbe } from '../liveness-probe.js';

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

describe(`untrusted input at full size (${STORE})`, () => {
  it('150 paused 24 MiB capture uploads hold at most MAX_INFLIGHT_CAPTURE_BYTES; the rest get 503 at once; a 25 MiB Stripe body with 2,000 v1 is hashed once', {
    timeout: 300_000,
  }, async () => {
    const storage = await createTestStorage();
    const svc = await spawnService({ LOG_LEVEL: 'warn', MAX_INFLIGHT_CAPTURE_BYTES: String(128 * 1024 * 1024) }, storage);
    let probe: LivenessProbe | undefined;
    let stripeProbe: LivenessProbe | undefined;
    try {
      const created = await api(svc.baseUrl, 'POST', '/api/v1/addresses', { json: {} });
      assert.equal(created.status, 201, created.text);
      const hook = new URL(created.json.endpoints.hook_url);
      const pid = svc.proc.pid!;
      const idle = rssMb(pid);

      probe = startLivenessProbe(svc.baseUrl);
      const chunk = Buffer.alloc(24 * 1024 * 1024, 0x61);
      const statuses: string[] = [];
      // The budget's 503 is sent without draining the body (reading it is what the budget refuses), so
      // a client still writing may see the connection reset before it reads the 503: refused all the same.
      let resetUnanswered = 0;
      const sockets = await Promise.all(
        Array.from(
          { length: 150 },
          () =>
            new Promise<Socket>((resolve) => {
              let answered = false;
              const s = connect(Number(hook.port), hook.hostname, () => {
                s.write(
                  `POST ${hook.pathname} HTTP/1.1\r\nHost: ${hook.host}\r\nContent-Type: application/octet-stream\r\nContent-Length: ${chunk.length + 1}\r\n\r\n`,
                );
                s.write(chunk, () => resolve(s));
              });
              s.on('data', (d: Buffer) => {
                const code = /^HTTP\/1\.1 (\d{3})/.exec(d.toString('latin1'))?.[1];
                if (code) {
                  answered = true;
                  statuses.push(code);
                }
              });
              s.on('error', () => {
                if (!answered) resetUnanswered++;
                resolve(s);
              });
            }),
        ),
      );
      await sleep(3000);
      const held = rssMb(pid) - idle;
      for (const s of sockets) s.destroy();
      const refused = statuses.filter((c) => c === '503').length + resetUnanswered;
      assert.ok(refused >= 140, `most uploads were refused at once (${refused} of 150: ${resetUnanswered} of them reset before the 503 was read)`);
      assert.ok(held < 128 + 300, `the paused uploads held ${held.toFixed(0)} MB (budget 128 MiB; +3.2 GB before)`);

      const uploadsProbe = await probe.stop();
      assert.deepEqual(uploadsProbe.failures, []);
      assert.ok(uploadsProbe.maxMs < 1000, `/healthz answered within 1 s beside the uploads (slowest ${Math.round(uploadsProbe.maxMs)} ms)`);

      stripeProbe = startLivenessProbe(svc.baseUrl);
      const put = await api(svc.baseUrl, 'PUT', `/api/v1/addresses/${created.json.address.id}/signing-secrets`, {
        token: created.json.credentials.read_token,
        json: { stripe: 'whsec_full' },
      });
      assert.equal(put.status, 200, put.text);
      const signature = `t=${Math.floor(Date.now() / 1000)},${Array.from({ length: 2000 }, (_, i) => `v1=${i.toString(36)}`).join(',')}`;
      const body = JSON.stringify({ id: 'evt_full', object: 'event', type: 'x', pad: 'p'.repeat(25 * 1024 * 1024 - 100) });
      const stripe = await api(svc.baseUrl, 'POST', hook.toString(), { body, headers: { 'content-type': 'application/json', 'stripe-signature': signature } });
      assert.equal(stripe.status, 202, stripe.text);

      const { maxMs, failures } = await stripeProbe.stop();
      assert.deepEqual(failures, []);
      // A 25 MiB JSON body is parsed, hashed and stored on the event loop: bounded, linear work (a
      // few hundred ms here), not one HMAC per v1 entry (about a minute before).
      assert.ok(maxMs < 2000, `/healthz answered within 2 s beside the 25 MiB Stripe capture (slowest ${Math.round(maxMs)} ms)`);
    } finally {
      // A failed assertion must not leave a probe polling a stopped service (the file would hang).
      await probe?.stop();
      await stripeProbe?.stop();
      svc.proc.kill('SIGTERM');
      await svc.exited;
      await storage.drop();
    }
  });
});
