// The capture URL (design.md, "Capture URL") over a real socket, with deliveries shaped like the providers'
// own and signed in the test with each provider's documented algorithm and a test secret.
import assert from 'node:assert/strict';
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { type Addr, api, createAddress, listEvents, range, STORE, sleep, startTestService, type TestService } from '../helpers.js';

const hookUrl = (a: Addr): string => a.body.endpoints.hook_url;
const hmacHex = (secret: string | Buffer, text: string | Buffer) => createHmac('sha256', secret).update(text).digest('hex');

async function events(base: string, a: Addr, after = 0) {
  const r = await listEvents(base, a, { after, limit: 100 });
  assert.equal(r.status, 200, r.text);
  return r.json.events as any[];
}

function setSecrets(base: string, a: Addr, json: unknown) {
  return api(base, 'PUT', `/api/v1/addresses/${a.id}/signing-secrets`, { token: a.token, json });
}

/** A pull_request delivery as GitHub sends it (headers per docs.github.com "Webhook events and payloads"). */
function githubDelivery(secret: string, delivery = randomUUID()) {
  const body = JSON.stringify({
    action: 'closed',
    number: 42,
    pull_request: { id: 1847392001, number: 42, state: 'closed', merged: true, title: 'Fix the flux capacitor', user: { login: 'octocat', id: 583231 } },
    repository: { id: 1296269, full_name: 'octocat/Hello-World', private: false },
    sender: { login: 'octocat', id: 583231, type: 'User' },
  });
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'GitHub-Hookshot/a1b2c3d',
      'x-github-event': 'pull_request',
      'x-github-delivery': delivery,
      'x-github-hook-id': '292430182',
      'x-hub-signature-256': `sha256=${hmacHex(secret, body)}`,
    },
  };
}

describe('capture URL', () => {
  let svc: TestService;
  let base: string;
  before(async () => {
    svc = await startTestService({ MAX_CAPTURE_BYTES: String(25 * 1024 * 1024) });
    base = svc.baseUrl;
  });
  after(() => svc.stop());

  it('is in every create response, beside inbox_url, with the same write-only secret', async () => {
    const a = await createAddress(base);
    assert.equal(hookUrl(a), `${base}/api/v1/hooks/${a.id}/${a.secret}`);
  });

  it('GitHub: a signed pull_request is github.pull_request, verified, keyed by X-GitHub-Delivery; a retry is the same event', async () => {
    const a = await createAddress(base);
    const secret = "It's a Secret to Everybody";
    assert.deepEqual((await setSecrets(base, a, { github: secret })).json, { configured: ['github'] });
    const d = githubDelivery(secret);
    const first = await api(base, 'POST', `${hookUrl(a)}/github`, { body: d.body, headers: d.headers });
    assert.equal(first.status, 202, first.text);
    assert.deepEqual(Object.keys(first.json), ['event', 'duplicate']);
    assert.deepEqual(Object.keys(first.json.event), ['id', 'sequence']);
    assert.equal(first.json.duplicate, false);
    const retry = await api(base, 'POST', `${hookUrl(a)}/github`, { body: d.body, headers: d.headers });
    assert.equal(retry.status, 200);
    assert.deepEqual(retry.json, { event: first.json.event, duplicate: true });
    const [e, ...rest] = await events(base, a);
    assert.equal(rest.length, 0);
    assert.equal(e.type, 'github.pull_request');
    assert.equal(e.source, 'github');
    assert.equal(e.dedupe_key, `github:${d.headers['x-github-delivery']}`);
    assert.equal(e.data.method, 'POST');
    assert.equal(e.data.path, '/github');
    assert.equal(e.data.headers['x-github-event'], 'pull_request');
    assert.equal(e.data.content_type, 'application/json');
    assert.deepEqual(e.data.body, JSON.parse(d.body));
    assert.deepEqual(e.data.raw, {
      size: Buffer.byteLength(d.body),
      sha256: createHash('sha256').update(d.body).digest('hex'),
      encoding: 'utf8',
      content: d.body,
    });
    assert.equal(e.data.remote_ip, '127.0.0.1');
    assert.deepEqual(e.data.attachments, []);
    assert.equal(e.data.signature.scheme, 'github');
    assert.equal(e.data.signature.verified, true);

    // GitHub's documented test vector: "Hello, World!" under "It's a Secret to Everybody".
    const vector = await api(base, 'POST', hookUrl(a), {
      body: 'Hello, World!',
      headers: {
        'content-type': 'text/plain',
        'x-github-event': 'ping',
        'x-hub-signature-256': 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
      },
    });
    assert.equal(vector.status, 202);
    const tampered = await api(base, 'POST', hookUrl(a), { body: `${d.body} `, headers: { ...d.headers, 'x-github-delivery': randomUUID() } });
    assert.equal(tampered.status, 202, 'a bad signature is recorded, never refused');
    const [v, t] = await events(base, a, 1);
    assert.deepEqual([v.type, v.data.body, v.data.signature.verified], ['github.ping', 'Hello, World!', true]);
    assert.equal(t.data.signature.verified, false);
    assert.match(t.data.signature.reason, /does not match/);
  });

  it('GitHub: 30 concurrent retries of one delivery make one event, and every retry gets it', async () => {
    const a = await createAddress(base);
    const d = githubDelivery('s3cret');
    const answers = await Promise.all(range(1, 30).map(() => api(base, 'POST', hookUrl(a), { body: d.body, headers: d.headers })));
    const ids = new Set(answers.map((r) => r.json.event.id));
    assert.equal(ids.size, 1);
    assert.equal(answers.filter((r) => r.status === 202).length, 1);
    assert.equal(answers.filter((r) => r.status === 200 && r.json.duplicate === true).length, 29);
    assert.equal((await events(base, a)).length, 1);
  });

  it('concurrent captures of different requests get sequences 1..N without a gap', async () => {
    const a = await createAddress(base);
    const n = 60;
    const answers = await Promise.all(
      range(1, n).map((i) =>
        api(base, i % 2 ? 'POST' : 'PUT', `${hookUrl(a)}/n/${i}`, { body: `i=${i}`, headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
      ),
    );
    assert.ok(answers.every((r) => r.status === 202));
    assert.deepEqual(
      answers.map((r) => r.json.event.sequence).sort((x, y) => x - y),
      range(1, n),
    );
    const stored = await events(base, a);
    assert.deepEqual(
      stored.map((e) => e.sequence),
      range(1, n),
    );
    for (const e of stored) assert.equal(e.data.path, `/n/${e.data.body.i}`);
  });

  it('Stripe: Stripe-Signature checked with its timestamp tolerance; keyed by the event id', async () => {
    const a = await createAddress(base);
    const secret = 'whsec_test_5f1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d';
    await setSecrets(base, a, { stripe: secret });
    const body = JSON.stringify({
      id: 'evt_1PqR2sT3uV4wX5yZ',
      object: 'event',
      api_version: '2024-06-20',
      created: 1718000000,
      livemode: false,
      pending_webhooks: 1,
      type: 'checkout.session.completed',
      data: { object: { id: 'cs_test_a1B2c3', object: 'checkout.session', amount_total: 2000, currency: 'usd', payment_status: 'paid' } },
    });
    const sign = (t: number, key = secret) => `t=${t},v1=${hmacHex(key, `${t}.${body}`)},v0=${'0'.repeat(64)}`;
    const now = Math.floor(Date.now() / 1000);
    const post = (sig: string) =>
      api(base, 'POST', hookUrl(a), {
        body,
        headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': sig, 'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)' },
      });
    const ok = await post(sign(now));
    assert.equal(ok.status, 202, ok.text);
    // A retry of the same Stripe event (a new timestamp, so a new signature) is the same event.
    assert.deepEqual((await post(sign(now + 1))).json, { event: ok.json.event, duplicate: true });
    const [e] = await events(base, a);
    assert.deepEqual(
      [e.type, e.source, e.dedupe_key, e.data.signature.verified],
      ['stripe.checkout.session.completed', 'stripe', 'stripe:evt_1PqR2sT3uV4wX5yZ', true],
    );

    // Stale and wrong-key signatures: a second address, so the dedupe key does not answer first.
    const b = await createAddress(base);
    await setSecrets(base, b, { stripe: secret });
    const postB = (sig: string) =>
      api(base, 'POST', hookUrl(b), { body, headers: { 'content-type': 'application/json', 'stripe-signature': sig, 'idempotency-key': randomUUID() } });
    await postB(sign(now - 3600));
    await postB(sign(now, 'whsec_other'));
    const [stale, wrong] = await events(base, b);
    assert.equal(stale.data.signature.verified, false);
    assert.match(stale.data.signature.reason, /300 s/);
    assert.equal(wrong.data.signature.verified, false);
    assert.match(wrong.data.signature.reason, /no v1 signature/);
  });

  it('Slack: url_verification is answered with its challenge; a signed event_callback and a slash command are recognised', async () => {
    const a = await createAddress(base);
    const secret = '8f742231b10e8888abcd99yyyzzz85a5';
    await setSecrets(base, a, { slack: secret });
    const challenge = '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P';
    const hs = await api(base, 'POST', hookUrl(a), { json: { token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl', challenge, type: 'url_verification' } });
    assert.equal(hs.status, 200);
    assert.deepEqual(hs.json, { challenge });

    const ts = String(Math.floor(Date.now() / 1000));
    const callback = JSON.stringify({
      token: 'x',
      team_id: 'T061EG9R6',
      api_app_id: 'A0PNCHHK2',
      type: 'event_callback',
      event_id: 'Ev0PV52K25',
      event: {
        type: 'app_mention',
        user: 'U061F7AUR',
        text: '<@U0LAN0Z89> is it everything a river should be?',
        ts: '1515449522.000016',
        channel: 'C0LAN2Q65',
      },
    });
    const signed = await api(base, 'POST', hookUrl(a), {
      body: callback,
      headers: { 'content-type': 'application/json', 'x-slack-request-timestamp': ts, 'x-slack-signature': `v0=${hmacHex(secret, `v0:${ts}:${callback}`)}` },
    });
    assert.equal(signed.status, 202);
    // Slack's retry of the same event_id (X-Slack-Retry-Num) is the same event.
    const retried = await api(base, 'POST', hookUrl(a), {
      body: callback,
      headers: {
        'content-type': 'application/json',
        'x-slack-retry-num': '1',
        'x-slack-retry-reason': 'http_timeout',
        'x-slack-request-timestamp': ts,
        'x-slack-signature': `v0=${hmacHex(secret, `v0:${ts}:${callback}`)}`,
      },
    });
    assert.deepEqual(retried.json, { event: signed.json.event, duplicate: true });
    const command =
      'token=gIkuvaNzQIHg97ATvDxqgjtO&team_id=T0001&channel_id=C2147483705&user_id=U2147483697&command=%2Fweather&text=94070&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2F1234%2F5678';
    await api(base, 'POST', hookUrl(a), {
      body: command,
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-slack-request-timestamp': ts,
        'x-slack-signature': `v0=${hmacHex(secret, `v0:${ts}:${command}`)}`,
      },
    });
    const [v, cb, cmd] = await events(base, a);
    assert.deepEqual([v.type, v.source], ['slack.url_verification', 'slack']);
    assert.deepEqual([cb.type, cb.dedupe_key, cb.data.signature.scheme, cb.data.signature.verified], ['slack.app_mention', 'slack:Ev0PV52K25', 'slack', true]);
    assert.deepEqual([cmd.type, cmd.data.body.command, cmd.data.body.text, cmd.data.signature.verified], ['slack.command', '/weather', '94070', true]);
  });

  it('Standard Webhooks and Svix: <body.type>/webhook, keyed by webhook-id, the whsec_ signature checked', async () => {
    const a = await createAddress(base);
    const key = Buffer.from('a-32-byte-test-key-for-webhooks!');
    const secret = `whsec_${key.toString('base64')}`;
    await setSecrets(base, a, { standard_webhooks: secret });
    const body = JSON.stringify({ type: 'invoice.paid', timestamp: new Date().toISOString(), data: { invoice_id: 'inv_123', amount: 4200 } });
    const ts = String(Math.floor(Date.now() / 1000));
    // standardwebhooks.com spec: base64 HMAC-SHA256 of "<id>.<timestamp>.<body>" under the decoded key.
    const sig = (id: string) => `v1,${createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64')}`;
    const id1 = 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W';
    const r1 = await api(base, 'POST', hookUrl(a), {
      body,
      headers: { 'content-type': 'application/json', 'webhook-id': id1, 'webhook-timestamp': ts, 'webhook-signature': sig(id1) },
    });
    assert.equal(r1.status, 202);
    const id2 = 'msg_svix_p5jXN8AQM9LWM0D4loKWxJek';
    await api(base, 'POST', hookUrl(a), {
      body,
      headers: { 'content-type': 'application/json', 'svix-id': id2, 'svix-timestamp': ts, 'svix-signature': `v1,bad ${sig(id2)}` },
    });
    await api(base, 'POST', hookUrl(a), {
      body,
      headers: { 'content-type': 'application/json', 'webhook-id': 'msg_3', 'webhook-timestamp': ts, 'webhook-signature': sig('msg_other') },
    });
    const [e1, e2, e3] = await events(base, a);
    assert.deepEqual([e1.type, e1.source, e1.dedupe_key, e1.data.signature.verified], ['invoice.paid', 'webhook', `webhook:${id1}`, true]);
    assert.deepEqual([e2.dedupe_key, e2.data.signature.verified], [`webhook:${id2}`, true]);
    assert.equal(e3.data.signature.verified, false);
  });

  it('signatures without a secret are null, and requests with no signature say so', async () => {
    const a = await createAddress(base);
    const d = githubDelivery('whatever');
    await api(base, 'POST', hookUrl(a), { body: d.body, headers: d.headers });
    await api(base, 'POST', hookUrl(a), { json: { hello: 'world' } });
    const [signed, plain] = await events(base, a);
    assert.deepEqual([signed.data.signature.scheme, signed.data.signature.verified], ['github', null]);
    assert.match(signed.data.signature.reason, /no github signing secret/);
    assert.deepEqual([plain.type, plain.source, plain.data.signature.scheme, plain.data.signature.verified], ['http.request', 'https', null, null]);
  });

  it('an OAuth redirect in a browser gets a static page that echoes nothing; the code and state are in the event', async () => {
    const a = await createAddress(base);
    const code = '4/0AeaYSHB<script>alert(1)</script>';
    const state = 'st_9f8e7d';
    const r = await api(base, 'GET', `${hookUrl(a)}/oauth/callback?code=${encodeURIComponent(code)}&state=${state}&scope=email%20profile`, {
      headers: {
        accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8',
        'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
        referer: 'https://accounts.google.com/',
        'sec-fetch-mode': 'navigate',
        'sec-fetch-dest': 'document',
      },
    });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(r.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    assert.match(r.text, /close this tab/);
    for (const s of ['4/0AeaYSHB', 'script', state, a.id, a.secret]) assert.ok(!r.text.includes(s), `the page echoes ${s}`);
    const [e] = await events(base, a);
    assert.deepEqual([e.type, e.data.method, e.data.path, e.data.body], ['http.request', 'GET', '/oauth/callback', null]);
    assert.deepEqual(e.data.query, { code, state, scope: 'email profile' });
  });

  it('Meta hub.challenge and Microsoft Graph validationToken are answered as text/plain and stored', async () => {
    const a = await createAddress(base);
    const meta = await api(base, 'GET', `${hookUrl(a)}/whatsapp?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=meatyhamhock`);
    assert.deepEqual([meta.status, meta.text], [200, '1158201444']);
    assert.match(meta.headers.get('content-type') ?? '', /^text\/plain/);
    const graph = await api(base, 'POST', `${hookUrl(a)}/graph?validationToken=${encodeURIComponent('Validation: Token-123 <b>')}`, { body: '' });
    assert.deepEqual([graph.status, graph.text], [200, 'Validation: Token-123 <b>']);
    assert.match(graph.headers.get('content-type') ?? '', /^text\/plain/);
    assert.equal(graph.headers.get('x-content-type-options'), 'nosniff');
    const stored = await events(base, a);
    assert.deepEqual(
      stored.map((e) => e.data.query['hub.challenge'] ?? e.data.query.validationToken),
      ['1158201444', 'Validation: Token-123 <b>'],
    );
  });

  it('multipart: fields become the body and files become attachments', async () => {
    const a = await createAddress(base);
    const form = new FormData();
    form.append('title', 'Quarterly report');
    form.append('tag', 'a');
    form.append('tag', 'b');
    const pdf = Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.from([0, 1, 2, 255, 254, 253])]);
    form.append('file', new Blob([pdf], { type: 'application/pdf' }), 'report.pdf');
    const res = await fetch(hookUrl(a), { method: 'POST', body: form });
    assert.equal(res.status, 202);
    const [e] = await events(base, a);
    assert.match(e.data.content_type, /^multipart\/form-data; boundary=/);
    assert.deepEqual(e.data.body, { title: 'Quarterly report', tag: ['a', 'b'] });
    assert.deepEqual(e.data.attachments, [
      {
        filename: 'report.pdf',
        content_type: 'application/pdf',
        size: pdf.length,
        content_base64: pdf.toString('base64'),
        sha256: createHash('sha256').update(pdf).digest('hex'),
        url: `${base}/api/v1/addresses/${a.id}/events/${e.id}/attachments/0`,
      },
    ]);
    const file = await fetch(e.data.attachments[0].url, { headers: { authorization: `Bearer ${a.token}` } });
    assert.equal(file.status, 200);
    assert.ok(Buffer.from(await file.arrayBuffer()).equals(pdf), 'an inline file is at its url too, byte for byte');
    assert.equal(e.data.raw.encoding, 'base64', 'a body with binary parts is not UTF-8');
  });

  it('malformed bodies are captured as raw bytes with body null: never 400, never 500', async () => {
    const a = await createAddress(base);
    const cases: [string, Buffer, string | undefined][] = [
      ['broken JSON', Buffer.from('{"action": "opened",'), 'application/json'],
      ['broken multipart', Buffer.from('--XYZ\r\nContent-Disposition: form-data; name="a"\r\n\r\nvalue-without-end'), 'multipart/form-data; boundary=XYZ'],
      ['multipart without a boundary', Buffer.from('whatever'), 'multipart/form-data'],
      ['invalid UTF-8 as text', Buffer.from([0x68, 0x69, 0xc3, 0x28, 0xff]), 'text/plain; charset=utf-8'],
      ['invalid UTF-8 as JSON', Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]), 'application/json'],
      ['nested 200 levels', Buffer.from(`${'['.repeat(200)}${']'.repeat(200)}`), 'application/json'],
      ['an image', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), 'image/png'],
      ['a malformed content type', Buffer.from('x'), ';;;'],
    ];
    for (const [what, body, type] of cases) {
      const r = await fetch(hookUrl(a), { method: 'POST', body, headers: type === undefined ? {} : { 'content-type': type } });
      assert.equal(r.status, 202, `${what}: ${await r.text()}`);
    }
    const stored = await events(base, a);
    assert.equal(stored.length, cases.length);
    stored.forEach((e, i) => {
      const [what, body] = cases[i]!;
      assert.equal(e.data.body, null, what);
      assert.equal(e.data.raw.size, body.length, what);
      assert.equal(Buffer.from(e.data.raw.content, e.data.raw.encoding === 'utf8' ? 'utf8' : 'base64').equals(body), true, what);
      assert.equal(e.data.raw.sha256, createHash('sha256').update(body).digest('hex'), what);
    });
    assert.equal(stored[3].data.raw.encoding, 'base64');
  });

  it('a 20 MB body is stored byte for byte (beside the event, past MAX_EVENT_BYTES); one past MAX_CAPTURE_BYTES is 413', { timeout: 60_000 }, async () => {
    const a = await createAddress(base);
    const big = Buffer.alloc(20 * 1024 * 1024, 'abcdefghij');
    const r = await fetch(hookUrl(a), { method: 'POST', body: big, headers: { 'content-type': 'application/octet-stream' } });
    assert.equal(r.status, 202, await r.text());
    const page = await listEvents(base, a);
    const e = page.json.events[0];
    assert.equal(e.data.raw.size, big.length);
    assert.equal(e.data.raw.sha256, createHash('sha256').update(big).digest('hex'));
    assert.equal(e.data.raw.content, undefined, 'too large for the event: stored beside it');
    const bytes = Buffer.from(await (await fetch(e.data.raw.url, { headers: { authorization: `Bearer ${a.token}` } })).arrayBuffer());
    assert.ok(bytes.equals(big), 'GET raw.url answers the exact bytes');
    const tooBig = await fetch(hookUrl(a), {
      method: 'POST',
      body: Buffer.alloc(25 * 1024 * 1024 + 1),
      headers: { 'content-type': 'application/octet-stream' },
    });
    assert.equal(tooBig.status, 413);
    const err = (await tooBig.json()) as any;
    assert.equal(err.error.code, 'payload_too_large');
    assert.match(err.error.message, /MAX_CAPTURE_BYTES/);
    assert.equal((await events(base, a)).length, 1);
  });

  it('HEAD and OPTIONS answer 200 and store nothing; other methods of any sub-path are captured', async () => {
    const a = await createAddress(base);
    for (const method of ['HEAD', 'OPTIONS']) {
      const r = await fetch(`${hookUrl(a)}/probe`, { method });
      assert.equal(r.status, 200, method);
      assert.match(r.headers.get('allow') ?? '', /POST/);
    }
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) assert.equal((await api(base, method, `${hookUrl(a)}/a/b/c`)).status, 202, method);
    const stored = await events(base, a);
    assert.deepEqual(
      stored.map((e) => `${e.data.method} ${e.data.path}`),
      ['GET /a/b/c', 'POST /a/b/c', 'PUT /a/b/c', 'PATCH /a/b/c', 'DELETE /a/b/c'],
    );
  });

  it('Idempotency-Key comes first; an invalid one is 400 and stores nothing', async () => {
    const a = await createAddress(base);
    const d = githubDelivery('x');
    const r1 = await api(base, 'POST', hookUrl(a), { body: d.body, headers: { ...d.headers, 'idempotency-key': 'mine-1' } });
    const r2 = await api(base, 'POST', hookUrl(a), { body: 'other', headers: { 'idempotency-key': 'mine-1' } });
    assert.deepEqual(r2.json, { event: r1.json.event, duplicate: true });
    const bad = await api(base, 'POST', hookUrl(a), { body: 'x', headers: { 'idempotency-key': 'k'.repeat(256) } });
    assert.equal(bad.status, 400);
    assert.match(bad.json.error.message, /Idempotency-Key/);
    const stored = await events(base, a);
    assert.deepEqual(
      stored.map((e) => e.dedupe_key),
      ['mine-1'],
    );
  });

  it('the capture URL never lets anyone read, and a wrong secret looks like an unknown address', async () => {
    const a = await createAddress(base);
    const marker = `private-${randomUUID()}`;
    await api(base, 'POST', a.inboxUrl, { json: { data: { marker } } });
    const answers = await Promise.all([
      api(base, 'GET', hookUrl(a)),
      api(base, 'GET', `${hookUrl(a)}/events`),
      api(base, 'GET', `${hookUrl(a)}?after=0`),
      api(base, 'GET', hookUrl(a), { headers: { accept: 'text/html' } }),
      fetch(hookUrl(a), { method: 'HEAD' }).then(async (r) => ({ status: r.status, text: await r.text() })),
    ]);
    for (const r of answers) assert.ok(!r.text.includes(marker) && !r.text.includes('"data"'), r.text);
    const wrongSecret = await api(base, 'POST', `${base}/api/v1/hooks/${a.id}/aa_ingress_${'A'.repeat(43)}/x`, { body: 'x' });
    const unknown = await api(base, 'POST', `${base}/api/v1/hooks/addr_${'0'.repeat(26)}/${a.secret}`, { body: 'x' });
    const inboxSecretAsBearer = await api(base, 'GET', `/api/v1/addresses/${a.id}/events`, { headers: { authorization: `Bearer ${a.secret}` } });
    assert.deepEqual([wrongSecret.status, unknown.status, inboxSecretAsBearer.status], [404, 404, 401]);
    assert.equal(wrongSecret.text, unknown.text);
    assert.equal((await events(base, a)).length, 1 + 4, 'the four capturing requests above were stored, HEAD was not');
  });

  it('signing secrets: bearer only, validated, replaced as a whole, never returned, and not in the database in clear', async () => {
    const a = await createAddress(base);
    const secret = `gh-secret-${randomUUID()}`;
    const noAuth = await api(base, 'PUT', `/api/v1/addresses/${a.id}/signing-secrets`, { json: { github: secret } });
    assert.equal(noAuth.status, 401);
    const withInboxSecret = await api(base, 'PUT', `/api/v1/addresses/${a.id}/signing-secrets`, {
      json: { github: secret },
      headers: { authorization: `Bearer ${a.secret}` },
    });
    assert.equal(withInboxSecret.status, 401);
    assert.equal((await setSecrets(base, a, { gitlab: 'x' })).status, 400);
    assert.equal((await setSecrets(base, a, { github: '' })).status, 400);
    assert.equal((await setSecrets(base, a, { standard_webhooks: 'not base64!' })).status, 400);
    const set = await setSecrets(base, a, { github: secret, slack: 'slack-secret' });
    assert.deepEqual([set.status, set.json], [200, { configured: ['github', 'slack'] }]);
    assert.ok(!set.text.includes(secret));
    await api(base, 'POST', hookUrl(a), githubDelivery(secret));
    assert.equal((await events(base, a))[0].data.signature.verified, true);
    // Replaced as a whole: github is gone now.
    assert.deepEqual((await setSecrets(base, a, { slack: 'slack-secret' })).json, { configured: ['slack'] });
    await api(base, 'POST', hookUrl(a), githubDelivery(secret));
    assert.equal((await events(base, a, 1))[0].data.signature.verified, null);
    await setSecrets(base, a, { github: secret });

    // What a copy of the database holds: neither the secret nor anything that opens it.
    let stored: Buffer;
    if (STORE === 'postgres') {
      const c = new pg.Client({ connectionString: svc.storage.databaseUrl });
      await c.connect();
      const r = await c.query('SELECT * FROM addresses WHERE id = $1', [a.id]);
      await c.end();
      stored = Buffer.from(
        JSON.stringify(r.rows[0], (_k, v) => (v?.type === 'Buffer' ? Buffer.from(v.data).toString('latin1') : v)),
        'latin1',
      );
    } else {
      await sleep(100);
      stored = Buffer.concat(readdirSync(svc.storage.dataDir).map((f) => readFileSync(join(svc.storage.dataDir, f))));
    }
    assert.ok(stored.includes(Buffer.from(a.id)), 'the dump holds the address');
    for (const s of [secret, a.token, a.secret]) assert.ok(!stored.includes(Buffer.from(s)), 'the database holds a credential in clear');
  });

  it('expired addresses are 410 and a full queue is 429, as on the inbox', async () => {
    const short = await startTestService({ DEFAULT_TTL_SECONDS: '1', MAX_EVENTS_PER_ADDRESS: '2' });
    try {
      const a = await createAddress(short.baseUrl);
      assert.equal((await api(short.baseUrl, 'POST', hookUrl(a), { body: '1' })).status, 202);
      assert.equal((await api(short.baseUrl, 'POST', hookUrl(a), { body: '2' })).status, 202);
      const full = await api(short.baseUrl, 'POST', hookUrl(a), { body: '3' });
      assert.deepEqual([full.status, full.json.error.code], [429, 'queue_full']);
      assert.ok(full.headers.get('retry-after'));
      await sleep(1100);
      const expired = await api(short.baseUrl, 'GET', hookUrl(a), { headers: { accept: 'text/html' } });
      assert.deepEqual([expired.status, expired.json.error.code], [410, 'address_expired']);
    } finally {
      await short.stop();
    }
  });
});
