// The Events extension's webhook mode (events/subscribe, events/unsubscribe), black box with a raw
// JSON-RPC client of revision 2026-07-28 and a real local receiver (PUSH_ALLOW_PRIVATE=true so
// http://127.0.0.1 may be a target), on each store: occurrences arrive one per POST, in order,
// signed with Standard Webhooks, each with X-MCP-Subscription-Id; subscribing again with the same
// request is the refresh (same deterministic id, later expiry, position and secret kept); events/
// unsubscribe stops delivery. Bad requests are JSON-RPC errors naming the param; without
// PUSH_ALLOW_PRIVATE an inside URL is refused and never contacted. A liveness probe
// runs beside it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Addr, api, createAddress, deliver, STORE, startTestService, type TestService } from '../helpers.js';
import { type LivenessProbe, startLivenessProbe } from '../liveness-probe.js';
import { type Delivery, type Receiver, startReceiver, until, verify } from '../push/receiver.js';
import { call, result } from './mcp-modern-client.js';

const NAME = 'return_address.event';
const SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;

const occurrence = (d: Delivery): any => JSON.parse(d.body);

describe(`MCP events/subscribe: webhook delivery (${STORE})`, () => {
  let svc: TestService;
  let probe: LivenessProbe;
  const receivers: Receiver[] = [];
  before(async () => {
    svc = await startTestService({ PUSH_ALLOW_PRIVATE: 'true', PUSH_RETRY_SCHEDULE_MS: '0,100,100,100' });
    probe = startLivenessProbe(svc.baseUrl);
  });
  after(async () => {
    for (const r of receivers) await r.close();
    const p = await probe.stop();
    assert.deepEqual(p.failures, []);
    await svc.stop();
  });

  const receiver = async () => {
    const r = await startReceiver();
    receivers.push(r);
    return r;
  };
  const send = async (a: Addr, i: number) => assert.equal((await deliver(svc.baseUrl, a, { data: { i } })).status, 202);

  it('delivers 5 occurrences in order, signed, with X-MCP-Subscription-Id; a refresh keeps id, position and secret; unsubscribe stops it', async () => {
    const a = await createAddress(svc.baseUrl);
    const rx = await receiver();
    const request = { name: NAME, arguments: {}, cursor: null, delivery: { mode: 'webhook', url: rx.url }, ttlMs: 600_000 };
    const sub = await result(a.mcpUrl, a.token, 'events/subscribe', request);
    assert.match(sub.id, /^mcp\.event\.[0-9a-f]{32}$/);
    assert.match(sub.secret, /^whsec_/, 'a secret the client did not give is generated and shown');
    assert.equal(sub.ttlMs, 600_000);
    assert.ok(Date.parse(sub.expiresAt) > Date.now() + 500_000, sub.expiresAt);
    assert.equal(sub.cursor, '0');
    // It is a push subscription like any other: the REST API shows it, its position is push:<id>.
    const shown = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/subscriptions/${sub.id}`, { token: a.token });
    assert.equal(shown.status, 200, shown.text);

    for (let i = 1; i <= 3; i++) await send(a, i);
    await until(() => rx.received.length >= 3, 20_000, '3 occurrences');

    // The refresh: the same request again (cursor null, no secret; a later TTL) answers the same id, keeps the position and the secret.
    const again = await result(a.mcpUrl, a.token, 'events/subscribe', { ...request, ttlMs: 3_600_000 });
    assert.equal(again.id, sub.id, 'the id is deterministic');
    assert.equal(again.secret, undefined, 'a refresh neither replaces nor shows the secret');
    assert.ok(Date.parse(again.expiresAt) > Date.parse(sub.expiresAt), 'the refresh moved the expiry');
    assert.equal(again.cursor, '3', 'the refresh kept the position');

    for (let i = 4; i <= 5; i++) await send(a, i);
    await until(() => rx.received.length >= 5, 20_000, '5 occurrences');
    const got = rx.received.map(occurrence);
    assert.deepEqual(
      got.map((o) => o.data.data.i),
      [1, 2, 3, 4, 5],
      'in order, none again after the refresh',
    );
    for (const [n, d] of rx.received.entries()) {
      verify(d, sub.secret); // the same secret before and after the refresh
      assert.equal(d.headers['x-mcp-subscription-id'], sub.id);
      const o = got[n];
      assert.equal(o.name, NAME);
      assert.equal(o.eventId, o.data.id);
      assert.equal(d.headers['webhook-id'], o.eventId);
      assert.equal(o.cursor, String(o.data.sequence));
      assert.equal(typeof o.timestamp, 'string');
    }

    // Unsubscribe by the request that made it; then a new subscription (another URL) from cursor 5
    // gets the next events, and by then the first receiver has had nothing more.
    const gone = await result(a.mcpUrl, a.token, 'events/unsubscribe', { name: NAME, arguments: {}, delivery: { url: rx.url } });
    assert.equal(gone.id, sub.id);
    const missing = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/subscriptions/${sub.id}`, { token: a.token });
    assert.equal(missing.status, 404);
    for (let i = 6; i <= 7; i++) await send(a, i);
    const rx2 = await receiver();
    const second = await result(a.mcpUrl, a.token, 'events/subscribe', {
      name: NAME,
      arguments: {},
      cursor: '5',
      delivery: { url: rx2.url, secret: SECRET },
    });
    assert.notEqual(second.id, sub.id, 'another URL is another subscription');
    assert.equal(second.secret, undefined, 'a given secret is never echoed');
    await until(() => rx2.received.length >= 2, 20_000, 'the new subscription got events 6 and 7');
    assert.deepEqual(
      rx2.received.map((d) => occurrence(d).data.data.i),
      [6, 7],
    );
    for (const d of rx2.received) verify(d, SECRET);
    assert.equal(rx.received.length, 5, 'the unsubscribed receiver got nothing after events/unsubscribe');
    // A second unsubscribe of the same id: NotFound.
    const twice = await call(a.mcpUrl, a.token, 'events/unsubscribe', { id: sub.id });
    assert.equal(twice.json.error?.code, -32023, twice.text);
  });

  it('a per-ingress type delivers only its way in; bad requests are JSON-RPC errors naming the param', async () => {
    const a = await createAddress(svc.baseUrl);
    const rx = await receiver();
    const sub = await result(a.mcpUrl, a.token, 'events/subscribe', {
      name: 'return_address.service',
      arguments: {},
      cursor: null,
      delivery: { url: rx.url, secret: SECRET },
    });
    assert.match(sub.id, /^mcp\.service\./);
    const inbox = await result(a.mcpUrl, a.token, 'events/subscribe', {
      name: 'return_address.inbox',
      arguments: {},
      cursor: null,
      delivery: { url: rx.url, secret: SECRET },
    });
    await send(a, 1);
    await until(() => rx.received.length >= 1, 20_000, 'the inbox occurrence');
    assert.equal(rx.received.length, 1);
    assert.equal(rx.received[0]!.headers['x-mcp-subscription-id'], inbox.id, 'only the inbox subscription took the inbox event');
    assert.equal(occurrence(rx.received[0]!).name, 'return_address.inbox');

    const bad: [Record<string, unknown>, number, RegExp][] = [
      [{ name: NAME, arguments: {} }, -32602, /params\.delivery/],
      [{ name: NAME, arguments: {}, delivery: { url: 'ftp://x.example' } }, -32602, /params\.delivery\.url/],
      [{ name: NAME, arguments: {}, delivery: { mode: 'push', url: rx.url } }, -32602, /params\.delivery\.mode/],
      [{ name: NAME, arguments: {}, delivery: { url: rx.url, secret: 'short' } }, -32602, /params\.delivery\.secret/],
      [{ name: NAME, arguments: {}, delivery: { url: rx.url }, ttlMs: 5 }, -32602, /params\.ttlMs/],
      [{ name: NAME, arguments: { state: 'all' }, delivery: { url: rx.url } }, -32602, /state/],
      [{ name: 'nope', arguments: {}, delivery: { url: rx.url } }, -32023, /Unknown event type/],
      [{ name: NAME, arguments: { bogus: 1 }, delivery: { url: rx.url } }, -32602, /bogus/],
    ];
    for (const [params, code, why] of bad) {
      const r = await call(a.mcpUrl, a.token, 'events/subscribe', params);
      assert.equal(r.json?.error?.code, code, `${JSON.stringify(params)}: ${r.text}`);
      assert.match(r.json.error.message, why);
    }
    const badId = await call(a.mcpUrl, a.token, 'events/unsubscribe', { id: 'sub_0123' });
    assert.equal(badId.json?.error?.code, -32602, badId.text);
    // Another address's token cannot reach this address's subscriptions.
    const b = await createAddress(svc.baseUrl);
    const foreign = await call(a.mcpUrl, b.token, 'events/unsubscribe', { id: inbox.id });
    assert.equal(foreign.status, 401, foreign.text);
    assert.equal((await api(svc.baseUrl, 'GET', '/healthz')).status, 200);
  });
  it('many subscribes at once: the same request is one subscription, distinct ones stop at the cap with -32025; a large event is a raw.url reference', async () => {
    const a = await createAddress(svc.baseUrl);
    const rx = await receiver();
    const same = { name: NAME, arguments: { type: 'x.*' }, delivery: { url: rx.url, secret: SECRET }, ttlMs: 120_000 };
    const answers = await Promise.all(Array.from({ length: 20 }, () => call(a.mcpUrl, a.token, 'events/subscribe', same)));
    for (const r of answers) assert.equal(r.status, 200, r.text);
    const ids = new Set(answers.map((r) => r.json.result.id));
    assert.equal(ids.size, 1, 'one deterministic id for one request');
    const listed = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/subscriptions`, { token: a.token });
    assert.equal(listed.json.subscriptions.length, 1, 'twenty identical subscribes made one subscription');
    // Distinct URLs in parallel: the cap (MAX_SUBSCRIPTIONS_PER_ADDRESS, 10 by default) holds.
    const many = await Promise.all(
      Array.from({ length: 15 }, (_, i) => call(a.mcpUrl, a.token, 'events/subscribe', { ...same, delivery: { url: `${rx.url}/${i}`, secret: SECRET } })),
    );
    const made = many.filter((r) => r.json?.result?.id).length;
    const refused = many.filter((r) => r.json?.error?.code === -32025).length;
    assert.equal(made + refused, 15, many.map((r) => r.text).join('\n'));
    assert.equal(made, 9, 'nine more fit beside the first under a cap of ten');
    assert.equal((await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/subscriptions`, { token: a.token })).json.subscriptions.length, 10);

    // An event whose occurrence would exceed 256 KiB arrives as a reference to itself.
    const b = await createAddress(svc.baseUrl);
    const rx2 = await receiver();
    await result(b.mcpUrl, b.token, 'events/subscribe', { name: NAME, arguments: {}, delivery: { url: rx2.url, secret: SECRET } });
    const big = await deliver(svc.baseUrl, b, { data: { blob: 'x'.repeat(300 * 1024) } });
    assert.equal(big.status, 202, big.text);
    await until(() => rx2.received.length >= 1, 20_000, 'the large occurrence');
    const d = rx2.received[0]!;
    assert.ok(Buffer.byteLength(d.body) <= 256 * 1024, `body ${Buffer.byteLength(d.body)} bytes`);
    verify(d, SECRET);
    const o = occurrence(d);
    assert.equal(o.data.data.omitted, true);
    assert.match(o.data.data.raw.url, /\/events\?after=\d+&limit=1&state=all$/);
    const whole = await api('', 'GET', o.data.data.raw.url, { token: b.token });
    assert.equal(whole.json.events[0].data.blob.length, 300 * 1024, 'the reference answers the whole event');
  });
});

describe(`MCP events/subscribe on a public instance refuses inside targets (${STORE})`, () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({});
  });
  after(async () => svc.stop());

  it('loopback, private, link-local and [::1] URLs are -32602 naming params.delivery.url, and never contacted', async () => {
    const a = await createAddress(svc.baseUrl);
    const rx = await startReceiver();
    try {
      const urls = [
        rx.url,
        `https://127.0.0.1:${rx.port}/hooks`,
        'https://10.0.0.1/hooks',
        'https://169.254.169.254/latest',
        `https://[::1]:${rx.port}/hooks`,
        `https://localhost:${rx.port}/hooks`,
      ];
      for (const url of urls) {
        const r = await call(a.mcpUrl, a.token, 'events/subscribe', { name: NAME, arguments: {}, delivery: { url, secret: SECRET } });
        assert.equal(r.json?.error?.code, -32602, `${url}: ${r.text}`);
        assert.match(r.json.error.message, /params\.delivery\.url/);
      }
      await send(svc, a);
      const listed = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/subscriptions`, { token: a.token });
      assert.deepEqual(listed.json.subscriptions, []);
      assert.equal(rx.connections(), 0, 'the receiver was never contacted');
      assert.equal((await api(svc.baseUrl, 'GET', '/healthz')).status, 200);
    } finally {
      await rx.close();
    }
  });
});

async function send(svc: TestService, a: Addr): Promise<void> {
  assert.equal((await deliver(svc.baseUrl, a, { data: { i: 0 } })).status, 202);
}
