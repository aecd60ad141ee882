// HTTP series on a real metrics listener: answers by route template, method and status class, the
// latency histogram by route template, refused deliveries by way in and reason (SMTP included), and no
// label holding an id, a secret, a token, a path asked or a client address.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sendRaw, simpleMessage } from '../email/smtp-client.js';
import { api, createAddress, deliver, startTestService, type TestService } from '../helpers.js';
import { sample } from './helpers.js';

const INBOX = '/api/v1/inbox/:addressId/:secret';
const EVENTS = '/api/v1/addresses/:addressId/events';

describe('HTTP metrics', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ METRICS_PORT: '0', MAX_EVENTS_PER_ADDRESS: '2', DELIVERY_RATE_LIMIT: '100' });
  });
  after(() => svc.stop());

  const scrape = async () => {
    const res = await fetch(svc.running.metrics!.url);
    assert.equal(res.status, 200);
    return res.text();
  };

  it('counts answers by route template and refusals by reason, and no label holds an id, secret or address', async () => {
    const a = await createAddress(svc.baseUrl);
    const b = await createAddress(svc.baseUrl);
    const before = await scrape();
    const count = (text: string, route: string, method: string, status_class: string) =>
      sample(text, 'return_address_http_requests_total', { route, method, status_class }) ?? 0;
    const refused = (text: string, way_in: string, reason: string) => sample(text, 'return_address_deliveries_refused_total', { way_in, reason }) ?? 0;

    // inbox: 2 stored, then queue_full; a wrong secret and an unknown address (404); a bad body (400)
    for (let i = 0; i < 2; i++) assert.equal((await deliver(svc.baseUrl, a, { data: i })).status, 202);
    assert.equal((await deliver(svc.baseUrl, a, { data: 'full' })).status, 429);
    assert.equal((await api(svc.baseUrl, 'POST', `/api/v1/inbox/${a.id}/aa_ingress_${'x'.repeat(43)}`, { json: {} })).status, 404);
    assert.equal((await api(svc.baseUrl, 'POST', `/api/v1/inbox/addr_${'0'.repeat(26)}/${b.secret}`, { json: {} })).status, 404);
    assert.equal((await deliver(svc.baseUrl, b, { data: 1, nope: true })).status, 400);
    // capture: one stored, one to a wrong secret
    assert.ok((await api(svc.baseUrl, 'POST', b.body.endpoints.hook_url, { json: { hello: 1 } })).status < 300);
    assert.equal((await api(svc.baseUrl, 'POST', `/api/v1/hooks/${b.id}/aa_ingress_${'y'.repeat(43)}`, { json: {} })).status, 404);
    // reads: one 200, one 401 with another address's token
    assert.equal((await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events`, { token: a.token })).status, 200);
    assert.equal((await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events`, { token: b.token })).status, 401);
    // unknown paths, one of them carrying a secret
    assert.equal((await api(svc.baseUrl, 'GET', `/nowhere/${a.secret}`)).status, 404);
    assert.equal((await api(svc.baseUrl, 'GET', `/api/v1/inbox/${a.id}`)).status, 404);
    // SMTP: an unknown recipient
    const unknown = await sendRaw(svc.smtpPort, { from: 'x@example.com', rcpts: [`nobody@${new URL(svc.baseUrl).hostname}`], message: 'x' });
    assert.equal(unknown.rcpt[0]?.code, 550);
    // SMTP: a mail to a full address (queue_full, 452)
    const full = await sendRaw(svc.smtpPort, { from: 'x@example.com', rcpts: [a.email], message: simpleMessage({ to: a.email, messageId: 'm@example.com' }) });
    assert.equal(full.final?.code, 452);

    const text = await scrape();
    assert.equal(count(text, INBOX, 'POST', '2xx') - count(before, INBOX, 'POST', '2xx'), 2);
    assert.equal(count(text, INBOX, 'POST', '4xx') - count(before, INBOX, 'POST', '4xx'), 4);
    assert.equal(count(text, EVENTS, 'GET', '2xx') - count(before, EVENTS, 'GET', '2xx'), 1);
    assert.equal(count(text, EVENTS, 'GET', '4xx') - count(before, EVENTS, 'GET', '4xx'), 1);
    assert.equal(count(text, 'unmatched', 'GET', '4xx') - count(before, 'unmatched', 'GET', '4xx'), 2);
    assert.equal(count(text, '/api/v1/addresses', 'POST', '2xx'), 2);
    const latency = (t: string) => sample(t, 'return_address_http_request_duration_seconds_count', { route: INBOX }) ?? 0;
    assert.equal(latency(text) - latency(before), 6);
    assert.ok((sample(text, 'return_address_http_request_duration_seconds_bucket', { route: INBOX, le: '+Inf' }) ?? 0) >= 6);

    assert.equal(refused(text, 'inbox', 'queue_full') - refused(before, 'inbox', 'queue_full'), 1);
    assert.equal(refused(text, 'inbox', 'not_found') - refused(before, 'inbox', 'not_found'), 2);
    assert.equal(refused(text, 'inbox', 'invalid') - refused(before, 'inbox', 'invalid'), 1);
    assert.equal(refused(text, 'inbox', 'rate_limited'), 0);
    assert.equal(refused(text, 'capture', 'not_found') - refused(before, 'capture', 'not_found'), 1);
    assert.equal(refused(text, 'email', 'not_found') - refused(before, 'email', 'not_found'), 1);
    assert.equal(refused(text, 'email', 'queue_full') - refused(before, 'email', 'queue_full'), 1);
    // Every reason of every way in is there from the start.
    for (const way of ['inbox', 'capture', 'email']) {
      for (const reason of ['not_found', 'invalid', 'unauthorized', 'too_large', 'rate_limited', 'queue_full', 'expired', 'unavailable', 'blocked']) {
        assert.notEqual(sample(text, 'return_address_deliveries_refused_total', { way_in: way, reason }), undefined, `${way} ${reason}`);
      }
    }

    // Bounded labels: nothing a client sent or was given.
    for (const secret of [a.id, b.id, a.secret, b.secret, a.token, b.token, a.slug, 'nowhere', 'x'.repeat(43), '127.0.0.1', '::1']) {
      assert.ok(!text.includes(secret), `${secret} must not appear in /metrics`);
    }
    const routes = new Set([...text.matchAll(/^return_address_http_requests_total\{route="([^"]*)"/gm)].map((m) => m[1]));
    for (const route of routes) assert.ok(route === 'unmatched' || /^\/[a-z0-9/_.:*-]*$/i.test(route ?? ''), `route label ${route}`);
    assert.ok(routes.has(INBOX) && routes.has('unmatched'), [...routes].join(', '));
  });

  it('keeps one series per route template however many addresses, and deliveries stay live beside it', async () => {
    const addrs = await Promise.all(Array.from({ length: 20 }, () => createAddress(svc.baseUrl)));
    const results = await Promise.all(addrs.flatMap((a) => [deliver(svc.baseUrl, a, { data: 1 }), api(svc.baseUrl, 'GET', `/x/${a.id}`)]));
    assert.deepEqual(results.map((r) => r.status).sort(), [...Array(20).fill(202), ...Array(20).fill(404)].sort());
    const text = await scrape();
    const inboxSeries = text.split('\n').filter((l) => l.startsWith('return_address_http_requests_total{') && l.includes(`route="${INBOX}"`));
    assert.ok(inboxSeries.length <= 3, inboxSeries.join('\n'));
    for (const a of addrs) assert.ok(!text.includes(a.id) && !text.includes(a.secret));
    // Liveness beside it: a delivery right after answers at once.
    assert.equal((await deliver(svc.baseUrl, addrs[0]!, { data: 'after' })).status, 202);
  });
});
