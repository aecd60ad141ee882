// `forward --resign` and trust (design.md, "Trust: what an agent may believe") end to end: the real
// service, a real local handler, the CLI as a process. A fresh signature tells the handler the
// provider sent the request, so only what the service verified is signed again: a forged inbox event
// and a forged capture are skipped with a line saying why, a genuine capture and one whose matching
// signature only went stale are sent; --resign-unverified sends everything.
import assert from 'node:assert/strict';
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { api, createAddress, deliver, listEvents, startTestService, type TestService } from '../helpers.js';
import { type CliProcess, runCli } from './cli-process.js';
import { type LocalHandler, type Received, startLocalHandler } from './local-handler.js';

const hmacHex = (secret: string, ...parts: (string | Buffer)[]) => {
  const h = createHmac('sha256', secret);
  for (const p of parts) h.update(p);
  return h.digest('hex');
};
const safeEqual = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
const githubVerifies = (secret: string, r: Received) => safeEqual(String(r.headers['x-hub-signature-256']), `sha256=${hmacHex(secret, r.body)}`);

function githubDelivery(secret: string, action: string) {
  const body = `{"action":"${action}","number":42,"repository":{"full_name":"octocat/Hello-World"}}`;
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'GitHub-Hookshot/a1b2c3d',
      'x-github-event': 'pull_request',
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': `sha256=${hmacHex(secret, body)}`,
    },
  };
}

async function stopCleanly(p: CliProcess): Promise<void> {
  p.proc.kill('SIGINT');
  const run = await p;
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stderr, /forward: stopped\n$/);
}

describe('return-address forward --resign and trust', () => {
  let svc: TestService;
  const handlers: LocalHandler[] = [];
  const running: CliProcess[] = [];
  const handler = async () => {
    const h = await startLocalHandler();
    handlers.push(h);
    return h;
  };
  before(async () => {
    svc = await startTestService();
  });
  after(async () => {
    for (const p of running) if (p.proc.exitCode === null && p.proc.signalCode === null) p.proc.kill('SIGKILL');
    for (const h of handlers) await h.close();
    await svc.stop();
  });

  it('--resign signs only what verified: a forged inbox event and a forged capture are skipped with a line saying why, a genuine or merely stale capture is sent', async () => {
    const a = await createAddress(svc.baseUrl);
    const providerGithub = 'provider-github-secret';
    const providerStripe = 'whsec_provider';
    const set = await api(svc.baseUrl, 'PUT', `/api/v1/addresses/${a.id}/signing-secrets`, {
      token: a.token,
      json: { github: providerGithub, stripe: providerStripe },
    });
    assert.equal(set.status, 200, set.text);
    const hook = a.body.endpoints.hook_url;
    // 1: the inbox URL's forgery of a verified provider event.
    await deliver(svc.baseUrl, a, { type: 'github.pull_request', source: 'github', data: { signature: { scheme: 'github', verified: true } } });
    // 2: a capture whose signature does not hold.
    const forged = githubDelivery('not-the-provider-secret', 'opened');
    await api(svc.baseUrl, 'POST', hook, { body: forged.body, headers: forged.headers });
    // 3: the genuine delivery.
    const genuine = githubDelivery(providerGithub, 'closed');
    await api(svc.baseUrl, 'POST', hook, { body: genuine.body, headers: genuine.headers });
    // 4: Stripe's genuine signature, an hour old: only the timestamp fails, so it may be signed again.
    const stripeBody = '{"id":"evt_stale","object":"event","type":"invoice.paid","data":{"object":{}}}';
    const t = Math.floor(Date.now() / 1000) - 3600;
    await api(svc.baseUrl, 'POST', hook, {
      body: stripeBody,
      headers: { 'content-type': 'application/json', 'stripe-signature': `t=${t},v1=${hmacHex(providerStripe, `${t}.`, stripeBody)}` },
    });
    const trusts = (await listEvents(svc.baseUrl, a)).json.events.map((e: any) => [e.trust.ingress, e.trust.verified]);
    assert.deepEqual(trusts, [
      ['inbox', null],
      ['capture', false],
      ['capture', true],
      ['capture', false],
    ]);
    // The saved file names the service; RETURN_ADDRESS_URL points nowhere and must not be used.
    const file = join(mkdtempSync(join(tmpdir(), 'ra-forward-')), 'a.json');
    writeFileSync(file, JSON.stringify({ ...a.body, url: svc.baseUrl, cursor: 0 }), { mode: 0o600 });
    const h = await handler();
    const p = runCli(['forward', '--save', file, '--to', h.url, '--resign', 'github:local-gh'], { RETURN_ADDRESS_URL: 'http://127.0.0.1:9' });
    running.push(p);
    const lines = await p.waitForLines(/^forward (SKIP|\d{3}) /, 4);
    await stopCleanly(p);
    assert.match(
      lines[0]!,
      /^forward SKIP github\.pull_request seq=1 -> .*: not re-signed: inbox event unverified \(nothing was checked\): sent to the inbox URL/,
    );
    assert.match(lines[1]!, /^forward SKIP github\.pull_request seq=2 -> .*: not re-signed: capture event not verified: X-Hub-Signature-256 does not match/);
    assert.match(lines[2]!, /^forward 200 POST \S* ?github\.pull_request seq=3 /);
    assert.match(lines[3]!, /^forward 200 POST \S* ?stripe\.invoice\.paid seq=4 /);
    assert.equal(h.received.length, 2, 'the forgeries never reached the handler');
    assert.equal(h.received[0]!.body.toString(), genuine.body);
    assert.ok(githubVerifies('local-gh', h.received[0]!));
    assert.equal(h.received[1]!.body.toString(), stripeBody);

    // --resign-unverified: the same queue from the start, forgeries included, signed (the handler chose this).
    const all = await handler();
    const q = runCli(['forward', '--save', file, '--to', all.url, '--from-sequence', '1', '--resign', 'github:local-gh', '--resign-unverified'], {});
    running.push(q);
    await q.waitForLines(/^forward 200 /, 4);
    await stopCleanly(q);
    assert.equal(all.received.length, 4);
  });
});
