// /metrics on METRICS_PORT after a short load over every way in: the series of design.md, "Operating a public instance"
// with the values the load implies, never an address id, and never on the public port.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sendRaw, simpleMessage } from '../email/smtp-client.js';
import { api, createAddress, deliver, startTestService, type TestService } from '../helpers.js';
import { sample } from './helpers.js';

describe('GET /metrics', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ METRICS_PORT: '0', MAX_EVENTS_PER_ADDRESS: '6' });
  });
  after(() => svc.stop());

  it('is not on the public port, and counts a short load exactly', async () => {
    assert.equal((await api(svc.baseUrl, 'GET', '/metrics')).status, 404);
    const metricsUrl = svc.running.metrics!.url;
    assert.notEqual(new URL(metricsUrl).port, new URL(svc.baseUrl).port);

    const a = await createAddress(svc.baseUrl);
    const b = await createAddress(svc.baseUrl);
    // inbox: 3 created + 1 duplicate on a
    for (let i = 0; i < 3; i++) assert.equal((await deliver(svc.baseUrl, a, { data: { i } }, `k${i}`)).status, 202);
    assert.equal((await deliver(svc.baseUrl, a, { data: { i: 0 } }, 'k0')).status, 200);
    // capture: 2 created on a (5 stored, 5 unacknowledged)
    for (let i = 0; i < 2; i++) {
      const r = await api(svc.baseUrl, 'POST', a.body.endpoints.hook_url, { json: { hello: i } });
      assert.ok(r.status < 300, r.text);
    }
    // email: 1 created on a (6 = MAX_EVENTS_PER_ADDRESS), then one more is queue_full (452)
    const first = await sendRaw(svc.smtpPort, {
      from: 'x@example.com',
      rcpts: [a.email],
      message: simpleMessage({ to: a.email, messageId: 'm1@example.com' }),
    });
    assert.equal(first.final?.code, 250);
    const full = await sendRaw(svc.smtpPort, { from: 'x@example.com', rcpts: [a.email], message: simpleMessage({ to: a.email, messageId: 'm2@example.com' }) });
    assert.equal(full.final?.code, 452);
    // inbox refused: queue_full on a; a body over the limit on b (413 before any handler)
    assert.equal((await deliver(svc.baseUrl, a, { data: 'more' })).status, 429);
    const big = await api(svc.baseUrl, 'POST', b.inboxUrl, {
      body: JSON.stringify({ data: 'x'.repeat(1024 * 1024 + 10) }),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(big.status, 413);
    // an unknown recipient: 550 at RCPT
    const unknown = await sendRaw(svc.smtpPort, { from: 'x@example.com', rcpts: [`nobody@${new URL(svc.baseUrl).hostname}`], message: 'x' });
    assert.equal(unknown.rcpt[0]?.code, 550);
    // acknowledge one event: 5 unacknowledged of 6
    const page = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events`, { token: a.token });
    const oldest = page.json.events[0];
    assert.equal((await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/events/${oldest.id}/ack`, { token: a.token })).status, 200);
    // a long-poll held on b while scraping
    const held = new AbortController();
    const poll = api(svc.baseUrl, 'GET', `/api/v1/addresses/${b.id}/events?wait=20`, { token: b.token, signal: held.signal }).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 200));

    const res = await fetch(metricsUrl);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    held.abort();
    await poll;
    process.stdout.write(
      `--- /metrics after the load (return_address_ series) ---\n${text
        .split('\n')
        .filter((l) => l.includes('return_address_'))
        .join('\n')}\n`,
    );

    const d = (route: string, outcome: string) => sample(text, 'return_address_deliveries_total', { route, outcome });
    assert.equal(d('inbox', 'created'), 3);
    assert.equal(d('inbox', 'duplicate'), 1);
    assert.equal(d('inbox', 'queue_full'), 1);
    assert.equal(d('inbox', 'too_large'), 1);
    assert.equal(d('capture', 'created'), 2);
    assert.equal(d('email', 'created'), 1);
    assert.equal(d('email', 'queue_full'), 1);
    assert.equal(sample(text, 'return_address_duplicates_total', { route: 'inbox' }), 1);
    assert.equal(sample(text, 'return_address_refused_total', { route: 'inbox', reason: 'queue_full' }), 1);
    assert.equal(sample(text, 'return_address_refused_total', { route: 'inbox', reason: 'too_large' }), 1);
    assert.equal(sample(text, 'return_address_refused_total', { route: 'email', reason: 'queue_full' }), 1);
    assert.equal(sample(text, 'return_address_refused_total', { route: 'capture', reason: 'expired' }), 0);
    assert.equal(sample(text, 'return_address_events_stored'), 6);
    assert.equal(sample(text, 'return_address_events_unacknowledged'), 5);
    const age = sample(text, 'return_address_oldest_unacknowledged_age_seconds')!;
    assert.ok(age > 0 && age < 60, `oldest unacknowledged age ${age}`);
    assert.equal(sample(text, 'return_address_waiters', { kind: 'long_poll' }), 1);
    assert.equal(sample(text, 'return_address_waiters', { kind: 'stream' }), 0);
    assert.equal(sample(text, 'return_address_waiters', { kind: 'claim' }), 0);
    // every append that reached the store was timed: 3 + 1 duplicate + 2 + 1 + 2 refused as full
    assert.equal(sample(text, 'return_address_commit_duration_seconds_count'), 9);
    assert.equal(sample(text, 'return_address_smtp_replies_total', { stage: 'data', code: '250' }), 1);
    assert.equal(sample(text, 'return_address_smtp_replies_total', { stage: 'data', code: '452' }), 1);
    assert.equal(sample(text, 'return_address_smtp_replies_total', { stage: 'rcpt', code: '550' }), 1);
    assert.equal(sample(text, 'return_address_signatures_total', { result: 'unsigned' }), 2);
    assert.equal(sample(text, 'return_address_approvals_total', { status: 'decided' }), 0);
    assert.match(text, /^return_address_build_info\{version="[^"]+",node_version="v\d+[^"]*",store="(sqlite|postgres)"\} 1$/m);
    assert.match(text, /^# TYPE return_address_store_errors_total counter$/m);
    // Bounded labels: no address id, slug or IP anywhere.
    for (const secret of [a.id, b.id, a.slug, b.slug, '127.0.0.1']) assert.ok(!text.includes(secret), `${secret} must not appear in /metrics`);
  });

  it('a flood of scrapes costs the store little and deliveries stay live', async () => {
    const a = await createAddress(svc.baseUrl);
    const scrapes = Promise.all(
      Array.from({ length: 300 }, () => fetch(svc.running.metrics!.url).then(async (r) => ({ status: r.status, text: await r.text() }))),
    );
    // Liveness beside the flood: deliveries are answered while 300 scrapes are in flight.
    const t0 = Date.now();
    for (let i = 0; i < 5; i++) assert.equal((await deliver(svc.baseUrl, a, { data: i })).status, 202);
    const liveMs = Date.now() - t0;
    const results = await scrapes;
    assert.deepEqual([...new Set(results.map((r) => r.status))], [200]);
    assert.ok(results.every((r) => r.text.includes('return_address_events_stored')));
    assert.ok(liveMs < 10_000, `5 deliveries took ${liveMs} ms beside the scrapes`);
  });

  it('counts approval steps by status', async () => {
    const a = await createAddress(svc.baseUrl);
    const created = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/approvals`, { token: a.token, json: { question: 'Ship it?' } });
    assert.equal(created.status, 201, created.text);
    const second = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/approvals`, { token: a.token, json: { question: 'And this?' } });
    const answered = await api(svc.baseUrl, 'POST', created.json.approval.url, {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'option=approve',
    });
    assert.equal(answered.status, 200, answered.text);
    assert.equal((await api(svc.baseUrl, 'DELETE', `/api/v1/addresses/${a.id}/approvals/${second.json.approval.id}`, { token: a.token })).status, 200);
    const text = await (await fetch(svc.running.metrics!.url)).text();
    assert.equal(sample(text, 'return_address_approvals_total', { status: 'pending' }), 2);
    assert.equal(sample(text, 'return_address_approvals_total', { status: 'decided' }), 1);
    assert.equal(sample(text, 'return_address_approvals_total', { status: 'cancelled' }), 1);
    assert.equal(sample(text, 'return_address_approvals_total', { status: 'expired' }), 0);
  });

  it('answers only GET/HEAD /metrics on its listener', async () => {
    const base = svc.running.metrics!.url.replace(/\/metrics$/, '');
    assert.equal((await fetch(`${base}/`)).status, 404);
    assert.equal((await fetch(`${base}/metrics`, { method: 'POST' })).status, 405);
    assert.equal((await fetch(`${base}/metrics`, { method: 'HEAD' })).status, 200);
  });
});
