// The capture recipes an agent follows must work as written: GitHub's form-encoded deliveries match on the
// payload's own fields, a browser's form POST (OAuth response_mode=form_post) gets the close-tab
// page and is stored, and a number with more digits than a double holds comes out of the CLI as sent.
import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { eventMatches } from '@return-address/client';
import { RECEIVED_PAGE } from '../../src/http/routes/hooks.js';
import { runCli } from '../forward/cli-process.js';
import { api, createAddress, listEvents, startTestService, type TestService } from '../helpers.js';

const hmacHex = (secret: string, body: string | Buffer) => createHmac('sha256', secret).update(body).digest('hex');

describe('capture recipes', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(() => svc.stop());

  it("GitHub's form-encoded delivery: data.body is the payload's JSON, raw the form bytes, the signature checked over them", async () => {
    const a = await createAddress(svc.baseUrl);
    const secret = 'form-secret';
    await api(svc.baseUrl, 'PUT', `/api/v1/addresses/${a.id}/signing-secrets`, { token: a.token, json: { github: secret } });
    const payload = '{"action":"closed","number":42,"pull_request":{"id":12345678901234567890,"merged":true},"note":"a&b=c+d %"}';
    const form = `payload=${encodeURIComponent(payload)}`;
    const r = await api(svc.baseUrl, 'POST', a.body.endpoints.hook_url, {
      body: form,
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-github-event': 'pull_request',
        'x-github-delivery': randomUUID(),
        'x-hub-signature-256': `sha256=${hmacHex(secret, form)}`,
      },
    });
    assert.equal(r.status, 202, r.text);
    const page = await listEvents(svc.baseUrl, a);
    const text = page.text;
    const [e] = page.json.events;
    assert.equal(e.type, 'github.pull_request');
    assert.equal(e.data.body.action, 'closed');
    assert.equal(e.data.body.note, 'a&b=c+d %');
    assert.match(text, /"id":12345678901234567890/, 'the payload keeps its own JSON text, digits and all');
    assert.equal(e.data.raw.content, form);
    assert.deepEqual(e.data.signature, { scheme: 'github', verified: true, reason: 'X-Hub-Signature-256 matches the HMAC-SHA256 of the body' });
    // A forged one still says so.
    const forged = await api(svc.baseUrl, 'POST', a.body.endpoints.hook_url, {
      body: form,
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-github-event': 'pull_request',
        'x-github-delivery': randomUUID(),
        'x-hub-signature-256': `sha256=${hmacHex('wrong', form)}`,
      },
    });
    assert.equal(forged.status, 202);
    const all = (await listEvents(svc.baseUrl, a)).json.events;
    assert.deepEqual(
      all.map((x: any) => eventMatches(x, { match: { 'data.body.action': 'closed', 'trust.ingress': 'capture', 'trust.verified': 'true' } })),
      [true, false],
    );
    // The same forgery sent to the inbox URL, data.signature and all: the recipe's filter passes over it.
    const copy = { type: 'github.pull_request', source: 'github', data: { ...all[0].data } };
    assert.equal((await api(svc.baseUrl, 'POST', a.inboxUrl, { json: copy })).status, 202);
    const withCopy = (await listEvents(svc.baseUrl, a)).json.events;
    assert.deepEqual(
      withCopy.map((x: any) => eventMatches(x, { match: { 'data.body.action': 'closed', 'data.signature.verified': 'true' } })),
      [true, false, true],
      'a filter on data matches the copy',
    );
    assert.deepEqual(
      withCopy.map((x: any) => eventMatches(x, { match: { 'data.body.action': 'closed', 'trust.ingress': 'capture', 'trust.verified': 'true' } })),
      [true, false, false],
      "the recipe's filter does not",
    );
  });

  it("a form that is not GitHub's shape stays a form: other fields, broken JSON, or no GitHub header", async () => {
    const a = await createAddress(svc.baseUrl);
    const cases: [Record<string, string>, string, unknown][] = [
      [{ 'x-github-event': 'push' }, 'payload=%7B%22a%22%3A1%7D&other=2', { payload: '{"a":1}', other: '2' }],
      [{ 'x-github-event': 'push' }, 'payload=%7Bnot%20json', { payload: '{not json' }],
      [{}, 'payload=%7B%22a%22%3A1%7D', { payload: '{"a":1}' }],
      [{ 'x-github-event': 'push' }, `payload=${encodeURIComponent('['.repeat(200) + ']'.repeat(200))}`, { payload: '['.repeat(200) + ']'.repeat(200) }],
    ];
    for (const [headers, body] of cases) {
      const r = await api(svc.baseUrl, 'POST', a.body.endpoints.hook_url, {
        body,
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      });
      assert.equal(r.status, 202, r.text);
    }
    const events = (await listEvents(svc.baseUrl, a)).json.events;
    assert.deepEqual(
      events.map((e: any) => e.data.body),
      cases.map((c) => c[2]),
    );
  });

  it('a form-encoded GitHub delivery of several MiB is unwrapped (its JSON stays under MAX_EVENT_BYTES) while liveness probes are answered', async () => {
    const a = await createAddress(svc.baseUrl);
    const items = Array.from({ length: 40_000 }, (_, i) => `{"id":${i},"name":"item ${i} & more","tags":["a","b"]}`).join(',');
    const payload = `{"action":"synchronize","items":[${items}]}`;
    const form = `payload=${encodeURIComponent(payload)}`;
    assert.ok(form.length > 3 * 1024 * 1024 && payload.length < 3 * 1024 * 1024, `${form.length} form bytes, ${payload.length} JSON bytes`);
    const big = api(svc.baseUrl, 'POST', a.body.endpoints.hook_url, {
      body: form,
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-github-event': 'pull_request', 'x-github-delivery': randomUUID() },
    });
    const probes = await Promise.all(Array.from({ length: 5 }, () => api(svc.baseUrl, 'GET', '/healthz')));
    assert.deepEqual(
      probes.map((p) => p.status),
      [200, 200, 200, 200, 200],
    );
    const r = await big;
    assert.equal(r.status, 202, r.text.slice(0, 200));
    const [e] = (await listEvents(svc.baseUrl, a, { limit: 1 })).json.events;
    assert.equal(e.data.body.action, 'synchronize');
    assert.equal(e.data.body.items.length, 40_000);
  });

  it("a browser's form POST (OAuth response_mode=form_post) gets the close-tab page and is stored; a program's POST gets JSON", async () => {
    const a = await createAddress(svc.baseUrl);
    const browserAccept = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
    const form = 'code=SplxlOBeZQQYbYS6WxSbIA&state=af0ifjsldkj&id_token=eyJ.<script>alert(1)</script>';
    const page = await fetch(`${a.body.endpoints.hook_url}/oauth/callback`, {
      method: 'POST',
      body: form,
      headers: { accept: browserAccept, 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    assert.equal(await page.text(), RECEIVED_PAGE, 'the static page, echoing nothing');
    const error = await fetch(`${a.body.endpoints.hook_url}/oauth/callback`, {
      method: 'POST',
      body: 'error=access_denied&error_description=The+user+said+no&state=s1',
      headers: { accept: browserAccept, 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(await error.text(), RECEIVED_PAGE);
    const multipart = new FormData();
    multipart.set('code', 'c2');
    const mp = await fetch(a.body.endpoints.hook_url, { method: 'POST', body: multipart, headers: { accept: browserAccept } });
    assert.equal(await mp.text(), RECEIVED_PAGE);
    // JSON from a program that also accepts HTML is no browser form.
    const json = await api(svc.baseUrl, 'POST', a.body.endpoints.hook_url, {
      body: '{"code":"c3"}',
      headers: { accept: browserAccept, 'content-type': 'application/json' },
    });
    assert.equal(json.status, 202);
    assert.equal(typeof json.json.event.id, 'string');
    const events = (await listEvents(svc.baseUrl, a)).json.events;
    assert.deepEqual(
      events.map((e: any) => [e.data.method, e.data.path, e.data.body.code ?? e.data.body.error]),
      [
        ['POST', '/oauth/callback', 'SplxlOBeZQQYbYS6WxSbIA'],
        ['POST', '/oauth/callback', 'access_denied'],
        ['POST', '', 'c2'],
        ['POST', '', 'c3'],
      ],
    );
    assert.equal(events[1].data.body.error_description, 'The user said no');
  });

  it('the CLI prints numbers with the digits the service holds (wait, events, deliver)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ra-digits-'));
    const a = await createAddress(svc.baseUrl);
    const file = join(dir, 'a.json');
    writeFileSync(file, JSON.stringify({ ...a.body, cursor: 0 }), { mode: 0o600 });
    const body =
      '{"big":12345678901234567890,"neg":-98765432109876543210,"exp":1.5e+300,"tiny":0.1000000000000000055511151231257827,"list":[9007199254740993]}';
    const r = await api(svc.baseUrl, 'POST', a.body.endpoints.hook_url, { body, headers: { 'content-type': 'application/json' } });
    assert.equal(r.status, 202, r.text);
    const env = { RETURN_ADDRESS_URL: svc.baseUrl };
    const waited = await runCli(['wait', '--save', file, '--timeout', '5'], env);
    assert.equal(waited.code, 0, waited.stderr);
    for (const token of ['12345678901234567890', '-98765432109876543210', '1.5e+300', '0.1000000000000000055511151231257827', '9007199254740993']) {
      assert.ok(waited.stdout.includes(token), `wait prints ${token}`);
    }
    assert.equal(typeof JSON.parse(waited.stdout).data.body.big, 'number', 'still JSON');
    assert.match(waited.stdout, /^\{\n {2}"id": "evt_/, 'indented like before');
    const acked = await runCli(['wait', '--save', file, '--timeout', '5', '--ack'], env);
    assert.ok(acked.stdout.includes('12345678901234567890'));
    assert.ok(JSON.parse(acked.stdout).acknowledged_at !== null);
    const page = await runCli(['events', '--save', file, '--after', '0'], env);
    assert.ok(page.stdout.includes('"big": 12345678901234567890'), page.stdout);
    const delivered = await runCli(['deliver', '--save', file, '--data', '{"n":1}'], env);
    assert.equal(delivered.code, 0);
    assert.equal(JSON.parse(delivered.stdout).duplicate, false);
  });
});
