// `return-address forward` (design.md, "Forwarding to a local handler") end to end: the real service, real local
// handlers on real sockets, the CLI as a process. A GitHub delivery verified by the handler with the
// original secret; re-signed deliveries verified with a local secret (GitHub, Stripe and Slack by
// their documented schemes, Standard Webhooks by the standardwebhooks package); a handler answering
// 500 then 200, retried in order; the forwarder SIGKILLed and restarted with the events that
// arrived meanwhile delivered, none lost, in order; several targets with their own filters;
// --from-sequence; --ack; a clean stop on SIGINT.
import assert from 'node:assert/strict';
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { type Addr, api, createAddress, deliver, listEvents, sleep, startTestService, type TestService } from '../helpers.js';
import { type CliProcess, runCli } from './cli-process.js';
import { type LocalHandler, type Received, startLocalHandler } from './local-handler.js';

const hmacHex = (secret: string, ...parts: (string | Buffer)[]) => {
  const h = createHmac('sha256', secret);
  for (const p of parts) h.update(p);
  return h.digest('hex');
};
const safeEqual = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** GitHub's documented check (docs.github.com, "Validating webhook deliveries"). */
const githubVerifies = (secret: string, r: Received) => safeEqual(String(r.headers['x-hub-signature-256']), `sha256=${hmacHex(secret, r.body)}`);

function savedFile(a: Addr): string {
  const file = join(mkdtempSync(join(tmpdir(), 'ra-forward-')), 'a.json');
  writeFileSync(file, JSON.stringify({ ...a.body, cursor: 0 }), { mode: 0o600 });
  return file;
}

function githubDelivery(secret: string, action: string) {
  const body = `{"action":"${action}","number":42,"pull_request":{"id":12345678901234567890,"merged":true},"repository":{"full_name":"octocat/Hello-World"}}`;
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

const seqOf = (r: Received) => Number(r.headers['x-return-address-sequence']);
/** Stops a forwarder with SIGINT and waits for it; it must exit 0 and say it stopped. */
async function stopCleanly(p: CliProcess): Promise<void> {
  p.proc.kill('SIGINT');
  const run = await p;
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stderr, /forward: stopped\n$/);
}

describe('return-address forward', () => {
  let svc: TestService;
  let env: Record<string, string>;
  const handlers: LocalHandler[] = [];
  const running: CliProcess[] = [];
  const handler = async (answer?: Parameters<typeof startLocalHandler>[0]) => {
    const h = await startLocalHandler(answer);
    handlers.push(h);
    return h;
  };
  const forward = (args: string[]) => {
    const p = runCli(['forward', ...args], env);
    running.push(p);
    return p;
  };
  before(async () => {
    svc = await startTestService();
    env = { RETURN_ADDRESS_URL: svc.baseUrl };
  });
  after(async () => {
    for (const p of running) if (p.proc.exitCode === null && p.proc.signalCode === null) p.proc.kill('SIGKILL');
    for (const h of handlers) await h.close();
    await svc.stop();
  });

  it('replays a GitHub delivery exactly: the handler verifies it with the original secret; other events come as Event JSON', async () => {
    const a = await createAddress(svc.baseUrl);
    const secret = 'original-github-secret';
    const gh = githubDelivery(secret, 'closed');
    assert.equal((await api(svc.baseUrl, 'POST', `${a.body.endpoints.hook_url}/github/pr-42?b=2&a=1&a=3`, { body: gh.body, headers: gh.headers })).status, 202);
    assert.equal(
      (
        await api(svc.baseUrl, 'POST', a.body.endpoints.inbox_url, {
          body: '{"type":"note","data":{"big":12345678901234567890}}',
          headers: { 'content-type': 'application/json' },
        })
      ).status,
      202,
    );
    const h = await handler((r) => (r.headers['x-github-event'] === undefined || githubVerifies(secret, r) ? 200 : 401));
    const p = forward(['--save', savedFile(a), '--to', `${h.url}/webhooks`]);
    const lines = await p.waitForLines(/^forward 200 /, 2);
    assert.match(lines[0]!, /^forward 200 POST \/github\/pr-42 github\.pull_request seq=1 \d+ms -> http:\/\/127\.0\.0\.1:\d+\/webhooks$/);
    assert.match(lines[1]!, /^forward 200 POST \/webhooks note seq=2 \d+ms/);
    await stopCleanly(p);
    const consumerName = `forward:${new URL(h.url).host}-webhooks`;
    assert.match(p.stderr(), new RegExp(`position kept by the service as consumer ${consumerName}`));
    const consumers = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/consumers`, { token: a.token });
    assert.deepEqual(
      consumers.json.consumers.map((c: any) => [c.name, c.cursor]),
      [[consumerName, 2]],
    );
    const [replay, note] = h.received;
    assert.equal(replay!.method, 'POST');
    assert.equal(replay!.url, '/webhooks/github/pr-42?b=2&a=1&a=3');
    assert.equal(replay!.body.toString('utf8'), gh.body, 'byte-identical body');
    assert.ok(githubVerifies(secret, replay!), 'the original signature holds');
    for (const name of ['x-github-event', 'x-github-delivery', 'user-agent', 'content-type'])
      assert.equal(replay!.headers[name], (gh.headers as Record<string, string>)[name], name);
    assert.equal(replay!.headers.host, new URL(h.url).host, "Host is the handler's");
    assert.equal(note!.headers['content-type'], 'application/json');
    assert.equal(note!.headers['x-return-address-event-type'], 'note');
    const stored = (await listEvents(svc.baseUrl, a)).json.events[1];
    assert.deepEqual(JSON.parse(note!.body.toString()), stored, 'the Event JSON as the service holds it');
  });

  it('drops hop-by-hop headers (and those Connection names) and Host; replays GET with its query, and a binary body byte for byte', async () => {
    const a = await createAddress(svc.baseUrl);
    const hook = new URL(a.body.endpoints.hook_url);
    // A raw request, so the capture sees exactly these headers.
    await new Promise<void>((resolve, reject) => {
      const s = net.connect(Number(hook.port), hook.hostname, () => {
        s.write(
          `PUT ${hook.pathname}/bin HTTP/1.1\r\nHost: tunnel.example\r\nConnection: close, X-Drop-Me\r\nX-Drop-Me: 1\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\nX-Keep: yes\r\nX-Utf8: caf\u00e9\r\nContent-Type: application/octet-stream\r\nContent-Length: 4\r\n\r\n`,
        );
        // Not end(): a half-closed socket may be dropped before the answer comes.
        s.write(Buffer.from([0xff, 0x00, 0xfe, 0x80]));
      });
      let answer = '';
      s.on('data', (d: Buffer) => {
        answer += d.toString();
        if (/\r\n\r\n/.test(answer)) {
          assert.match(answer, /^HTTP\/1\.1 202 /);
          s.end();
        }
      });
      s.on('close', () => resolve());
      s.on('error', reject);
    });
    assert.equal(
      (await api(svc.baseUrl, 'GET', `${a.body.endpoints.hook_url}/oauth/callback?code=abc&state=xyz`, { headers: { accept: 'text/html' } })).status,
      200,
    );
    const h = await handler();
    const p = forward(['--save', savedFile(a), '--to', h.url]);
    await p.waitForLines(/^forward 200 /, 2);
    await stopCleanly(p);
    const [put, get] = h.received;
    assert.equal(put!.method, 'PUT');
    assert.equal(put!.url, '/bin');
    assert.deepEqual([...put!.body], [0xff, 0x00, 0xfe, 0x80]);
    assert.equal(put!.headers['x-keep'], 'yes');
    assert.equal(Buffer.from(put!.headers['x-utf8'] as string, 'latin1').toString('utf8'), 'caf\u00e9', 'a UTF-8 header value goes out as its bytes');
    for (const gone of ['x-drop-me', 'keep-alive', 'te']) assert.equal(put!.headers[gone], undefined, gone);
    assert.notEqual(put!.headers.host, 'tunnel.example');
    assert.equal(get!.method, 'GET');
    assert.equal(get!.url, '/oauth/callback?code=abc&state=xyz');
    assert.equal(get!.body.length, 0);
    assert.equal(get!.headers['content-length'], undefined, 'a bodiless GET stays without Content-Length');
  });

  it("--resign: each scheme's signature verifies with the local secret, by its documented scheme or its own library", async () => {
    const a = await createAddress(svc.baseUrl);
    const gh = githubDelivery('provider-secret-unknown-locally', 'opened');
    await api(svc.baseUrl, 'POST', a.body.endpoints.hook_url, { body: gh.body, headers: gh.headers });
    const stripeBody = '{"id":"evt_1","object":"event","type":"invoice.paid","data":{"object":{"amount_paid":12345678901234567890}}}';
    await api(svc.baseUrl, 'POST', a.body.endpoints.hook_url, {
      body: stripeBody,
      headers: { 'content-type': 'application/json', 'stripe-signature': 't=1000,v1=00' },
    });
    const slackBody = 'token=x&command=%2Fdeploy&text=prod';
    await api(svc.baseUrl, 'POST', a.body.endpoints.hook_url, {
      body: slackBody,
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-slack-request-timestamp': '1000', 'x-slack-signature': 'v0=00' },
    });
    const swBody = '{"type":"user.created","data":{"id":"u_1"}}';
    await api(svc.baseUrl, 'POST', a.body.endpoints.hook_url, {
      body: swBody,
      headers: { 'content-type': 'application/json', 'svix-id': 'msg_2Lx', 'svix-timestamp': '1000', 'svix-signature': 'v1,AAAA' },
    });
    const file = savedFile(a);
    const local = {
      github: 'local-gh',
      stripe: 'whsec_localstripe',
      slack: 'local-slack',
      standard_webhooks: `whsec_${Buffer.from('a local standard webhooks key!').toString('base64')}`,
    };
    const verified: Record<string, boolean> = {};
    const runWith = async (scheme: keyof typeof local, check: (r: Received) => boolean, seq: number) => {
      const h = await handler((r) => (check(r) ? 200 : 401));
      // From this scheme's event on; only the first request is checked.
      // None of these verified (no secret is set here): --resign-unverified signs them anyway, which is
      // what this test of the signing schemes needs; the next test holds the rule without it.
      const p = forward(['--save', file, '--to', h.url, '--from-sequence', String(seq), '--resign', `${scheme}:${local[scheme]}`, '--resign-unverified']);
      await p.waitForLines(/^forward (200|401) /, 1);
      await stopCleanly(p);
      verified[scheme] = check(h.received[0]!) && h.received[0]!.body.length > 0;
      return h.received[0]!;
    };
    const now = () => Math.floor(Date.now() / 1000);
    const gr = await runWith('github', (r) => githubVerifies(local.github, r), 1);
    assert.equal(gr.body.toString(), gh.body);
    await runWith(
      'stripe',
      (r) => {
        // Stripe's documented scheme: t=<unix>,v1=HMAC(secret, "<t>.<body>"), within 300 s.
        const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(r.headers['stripe-signature']));
        return m !== null && Math.abs(now() - Number(m[1])) <= 300 && safeEqual(m[2]!, hmacHex(local.stripe, `${m[1]}.`, r.body));
      },
      2,
    );
    await runWith(
      'slack',
      (r) => {
        const ts = String(r.headers['x-slack-request-timestamp']);
        return Math.abs(now() - Number(ts)) <= 300 && safeEqual(String(r.headers['x-slack-signature']), `v0=${hmacHex(local.slack, `v0:${ts}:`, r.body)}`);
      },
      3,
    );
    const sw = await runWith(
      'standard_webhooks',
      (r) => {
        try {
          new Webhook(local.standard_webhooks).verify(r.body.toString('utf8'), {
            'webhook-id': String(r.headers['webhook-id']),
            'webhook-timestamp': String(r.headers['webhook-timestamp']),
            'webhook-signature': String(r.headers['webhook-signature']),
          });
          // Svix's own headers were signed too (Svix libraries read those).
          return r.headers['svix-signature'] === r.headers['webhook-signature'];
        } catch {
          return false;
        }
      },
      4,
    );
    assert.equal(sw.headers['webhook-id'], 'msg_2Lx', 'the message id is kept');
    assert.deepEqual(verified, { github: true, stripe: true, slack: true, standard_webhooks: true });
  });

  it('a handler answering 500 is retried (1 s, then 2 s) and nothing after that event is sent meanwhile', async () => {
    const a = await createAddress(svc.baseUrl);
    for (const n of [1, 2, 3]) assert.equal((await deliver(svc.baseUrl, a, { type: 'job', data: { n } })).status, 202);
    const h = await handler((_r, i) => (i < 2 ? 500 : 200));
    const p = forward(['--save', savedFile(a), '--to', h.url]);
    const lines = await p.waitForLines(/^forward \d+ /, 5);
    await stopCleanly(p);
    assert.deepEqual(h.received.map(seqOf), [1, 1, 1, 2, 3]);
    assert.match(lines[0]!, /^forward 500 POST \/ job seq=1 \d+ms -> .*; retry in 1s$/);
    assert.match(lines[1]!, /^forward 500 POST \/ job seq=1 .*; retry in 2s$/);
    assert.match(lines[2]!, /^forward 200 POST \/ job seq=1 /);
  });

  it('SIGKILLed and restarted: the events that arrived meanwhile are delivered, none lost, in order', async () => {
    const a = await createAddress(svc.baseUrl);
    const file = savedFile(a);
    const h = await handler();
    for (const n of [1, 2]) await deliver(svc.baseUrl, a, { type: 'job', data: { n } });
    const first = forward(['--save', file, '--to', h.url]);
    await first.waitForLines(/^forward 200 /, 2);
    first.proc.kill('SIGKILL');
    const killed = await first;
    assert.equal(killed.signal, 'SIGKILL');
    for (const n of [3, 4, 5, 6]) await deliver(svc.baseUrl, a, { type: 'job', data: { n } });
    const second = forward(['--save', file, '--to', h.url]);
    await second.waitForLines(/^forward 200 .* seq=6 /, 1);
    // And one that arrives while it runs: the long-poll picks it up.
    await deliver(svc.baseUrl, a, { type: 'job', data: { n: 7 } });
    await second.waitForLines(/^forward 200 .* seq=7 /, 1);
    await stopCleanly(second);
    const seqs = h.received.map(seqOf);
    // At least once: the one event whose 2xx was not yet recorded when the kill came may come twice.
    const distinct = seqs.filter((s, i) => i === 0 || s !== seqs[i - 1]);
    assert.deepEqual(distinct, [1, 2, 3, 4, 5, 6, 7], `received ${seqs}`);
    assert.ok(seqs.length <= 8, `at most one repeat: ${seqs}`);
    assert.match(second.stderr(), /seq=3 /);
  });

  it('several targets, each with its own --type/--match, and shared options before the first --to', async () => {
    const a = await createAddress(svc.baseUrl);
    await deliver(svc.baseUrl, a, { type: 'github.push', data: { repo: 'x' } });
    await deliver(svc.baseUrl, a, { type: 'stripe.invoice.paid', data: { live: true } });
    await deliver(svc.baseUrl, a, { type: 'stripe.invoice.paid', data: { live: false } });
    await deliver(svc.baseUrl, a, { type: 'github.issues', data: { repo: 'y' } });
    await deliver(svc.baseUrl, a, { type: 'other', data: {} });
    const gh = await handler();
    const st = await handler();
    const down = await handler(() => 503);
    const p = forward([
      '--save',
      savedFile(a),
      '--to',
      gh.url,
      '--type',
      'github.*',
      '--to',
      st.url,
      '--type',
      'stripe.invoice.paid',
      '--match',
      'data.live=true',
      '--to',
      `${down.url}/down`,
      '--type',
      'other',
    ]);
    await p.waitForLines(/^forward 200 /, 3);
    await p.waitForLines(/^forward 503 /, 1);
    await stopCleanly(p);
    assert.deepEqual(gh.received.map(seqOf), [1, 4]);
    assert.deepEqual(st.received.map(seqOf), [2]);
    assert.ok(
      down.received.every((r) => seqOf(r) === 5),
      'a target that is down holds back no other',
    );
  });

  it('--from-sequence replays, --ack acknowledges after a 2xx, usage errors name the fix', async () => {
    const a = await createAddress(svc.baseUrl);
    for (const n of [1, 2, 3]) await deliver(svc.baseUrl, a, { type: 'job', data: { n } });
    const file = savedFile(a);
    const h = await handler();
    const p1 = forward(['--save', file, '--to', h.url, '--ack']);
    await p1.waitForLines(/^forward 200 /, 3);
    await stopCleanly(p1);
    const acked = (await listEvents(svc.baseUrl, a)).json.events.map((e: any) => e.acknowledged_at !== null);
    assert.deepEqual(acked, [true, true, true]);
    const p2 = forward(['--save', file, '--to', h.url, '--from-sequence', '2']);
    await p2.waitForLines(/^forward 200 /, 2);
    await sleep(300);
    await stopCleanly(p2);
    assert.deepEqual(h.received.map(seqOf), [1, 2, 3, 2, 3]);
    const usage: [string[], RegExp][] = [
      [['--save', file], /give at least one --to URL/],
      [['--save', file, '--to', 'not a url'], /is not a URL/],
      [['--save', file, '--to', 'ftp://x'], /must be http/],
      [['--save', file, '--to', h.url, '--resign', 'gitlab:x'], /SCHEME one of github, stripe, slack, standard_webhooks/],
      [['--save', file, '--to', h.url, '--resign', 'github:'], /the secret after "github:" is empty/],
      [['--save', file, '--to', h.url, '--from-sequence', '0'], /--from-sequence must be an integer/],
      [['--save', file, '--to', h.url, '--to', h.url], /same URL/],
      [['--save', file, '--to', h.url, '--match', 'novalue'], /path=value/],
    ];
    for (const [args, message] of usage) {
      const r = await forward(args);
      assert.equal(r.code, 1, args.join(' '));
      assert.match(r.stderr, message);
    }
  });

  it('a service without named consumers (400 to consumer=): positions go to a local file, and a restart still resumes', async () => {
    const a = await createAddress(svc.baseUrl);
    // A real HTTP front that refuses consumer= as a service before named consumers did, and passes the rest on.
    const front = http.createServer(async (req, res) => {
      if (/[?&]consumer=/.test(req.url ?? '')) {
        res
          .writeHead(400, { 'content-type': 'application/json' })
          .end('{"error":{"code":"invalid_request","message":"Unknown query parameter \'consumer\': the allowed ones are after, limit, wait."}}');
        return;
      }
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const r = await fetch(`${svc.baseUrl}${req.url}`, {
        method: req.method,
        headers: { authorization: req.headers.authorization ?? '', 'content-type': 'application/json' },
        body: chunks.length ? Buffer.concat(chunks) : undefined,
      });
      res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' }).end(Buffer.from(await r.arrayBuffer()));
    });
    await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
    const frontUrl = `http://127.0.0.1:${(front.address() as net.AddressInfo).port}`;
    try {
      for (const n of [1, 2]) await deliver(svc.baseUrl, a, { type: 'job', data: { n } });
      const file = savedFile(a);
      const h = await handler();
      const first = runCli(['forward', '--save', file, '--to', h.url], { RETURN_ADDRESS_URL: frontUrl });
      running.push(first);
      await first.waitForLines(/^forward 200 .* seq=2 /, 1);
      assert.match(first.stderr(), /keeps no named consumers .* is kept in .*a\.json\.forward\.json/);
      await stopCleanly(first);
      // The position, and the ids sent (skipped if a restore makes it read again: forward-epoch.test.ts).
      const name = `forward:${new URL(h.url).host}`;
      const positions = JSON.parse(readFileSync(`${file}.forward.json`, 'utf8'));
      assert.equal(positions[name], 2);
      assert.deepEqual(positions.handled, { [name]: h.received.map((r) => JSON.parse(r.body.toString()).id) });
      await deliver(svc.baseUrl, a, { type: 'job', data: { n: 3 } });
      const second = runCli(['forward', '--save', file, '--to', h.url], { RETURN_ADDRESS_URL: frontUrl });
      running.push(second);
      await second.waitForLines(/^forward 200 .* seq=3 /, 1);
      await stopCleanly(second);
      assert.deepEqual(h.received.map(seqOf), [1, 2, 3]);
    } finally {
      front.closeAllConnections();
      front.close();
    }
  });

  it('the TypeScript client exposes the same replay as forward(ra, options)', async () => {
    const { ReturnAddress } = await import('@return-address/client');
    const { forward: forwardFn } = await import('../../src/forward/forwarder.js');
    const a = await createAddress(svc.baseUrl);
    const gh = githubDelivery('s', 'reopened');
    await api(svc.baseUrl, 'POST', a.body.endpoints.hook_url, { body: gh.body, headers: gh.headers });
    await deliver(svc.baseUrl, a, { type: 'note', data: {} });
    const h = await handler((_r, i) => (i === 0 ? 502 : 200));
    const ra = ReturnAddress.fromCreated(a.body, { url: svc.baseUrl });
    const stop = new AbortController();
    const attempts: number[] = [];
    const done = forwardFn(ra, {
      targets: [{ url: h.url }],
      signal: stop.signal,
      backoff: { initialMs: 50, maxMs: 100 },
      onAttempt: (x) => {
        attempts.push(x.status ?? 0);
        if (attempts.length === 3) stop.abort();
      },
    });
    await done;
    assert.deepEqual(attempts, [502, 200, 200]);
    assert.equal(h.received[1]!.body.toString(), gh.body);
    assert.equal(h.received[2]!.headers['x-return-address-event-type'], 'note');
  });
});
