// The Events extension's webhook mode (events/subscribe, events/unsubscribe) held to the working
// group's draft, black box with a raw JSON-RPC client of revision 2026-07-28 and real local
// receivers (PUSH_ALLOW_PRIVATE=true so http://127.0.0.1 may be a target), on each store. Before a
// subscription exists its URL gets a signed {"type":"verification","challenge"} POST and must echo
// the challenge: a receiver that does not (wrong echo, no JSON, 4xx, 5xx, refused, silent, a bad
// certificate) makes subscribe fail with -32015 and its data.reason, and nothing is stored or
// delivered. Then
// occurrences arrive one per POST, in order, signed with the client's secret, each with
// X-MCP-Subscription-Id; subscribing again with the same key is the refresh (same id, a new
// refreshBefore, the secret replaced, deliveryStatus, no second handshake); events/unsubscribe by
// the key stops delivery. Every error code the draft names that can arise here, the TTL grant
// rules, a 413 that is not retried and a 410 that pauses until a refresh. A liveness probe runs beside.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type Addr, api, createAddress, deliver, STORE, startTestService, type TestService } from '../helpers.js';
import { type LivenessProbe, startLivenessProbe } from '../liveness-probe.js';
import { type Delivery, startReceiver, until, verify } from '../push/receiver.js';
import { call, result } from './mcp-modern-client.js';

const NAME = 'return_address.event';
const SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
const SECRET2 = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;

/** How a hook answers the verification POST: echo it, echo something else, plain text, an echo behind 8 MiB, a status, or never. */
type Challenge = 'echo' | 'wrong' | 'text' | 'silent' | 'huge' | number;

interface Hook {
  url: string;
  port: number;
  /** Event deliveries (bodies without a top-level type). */
  received: Delivery[];
  /** Control bodies (verification). */
  controls: Delivery[];
  close(): Promise<void>;
}

/** A real receiver that answers the handshake as told and each event with `status(d, i)`. */
async function startHook(challenge: Challenge = 'echo', status: (d: Delivery, i: number) => number = () => 200): Promise<Hook> {
  const received: Delivery[] = [];
  const controls: Delivery[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      const parsed = JSON.parse(body);
      const d: Delivery = { headers: req.headers, body, event: parsed };
      if (typeof parsed.type === 'string') {
        controls.push(d);
        if (challenge === 'silent') return; // never answers: the server's timeout decides
        if (typeof challenge === 'number') return res.writeHead(challenge).end('no');
        if (challenge === 'text') return res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
        if (challenge === 'huge') {
          // The echo after 8 MiB of padding: the server stops reading long before it.
          res.writeHead(200, { 'content-type': 'application/json' });
          res.write(`{"pad":"${'x'.repeat(8 * 1024 * 1024)}",`);
          return res.end(`"challenge":"${parsed.challenge}"}`);
        }
        const echoed = challenge === 'echo' ? parsed.challenge : `${parsed.challenge}x`;
        return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ challenge: echoed }));
      }
      received.push(d);
      res.writeHead(status(d, received.length - 1)).end('');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    received,
    controls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const occurrence = (d: Delivery): any => JSON.parse(d.body);
const subs = async (svc: TestService, a: Addr) =>
  (await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/subscriptions`, { token: a.token })).json.subscriptions;

describe(`MCP events/subscribe: webhook mode as the draft has it (${STORE})`, () => {
  let svc: TestService;
  let probe: LivenessProbe;
  const hooks: Hook[] = [];
  before(async () => {
    svc = await startTestService({ PUSH_ALLOW_PRIVATE: 'true', PUSH_RETRY_SCHEDULE_MS: '0,100,100,100', PUSH_TIMEOUT_MS: '3000' });
    probe = startLivenessProbe(svc.baseUrl);
  });
  after(async () => {
    for (const h of hooks) await h.close();
    const p = await probe.stop();
    assert.deepEqual(p.failures, []);
    await svc.stop();
  });

  const hook = async (challenge: Challenge = 'echo', status?: (d: Delivery, i: number) => number) => {
    const h = await startHook(challenge, status);
    hooks.push(h);
    return h;
  };
  const send = async (a: Addr, i: number) => assert.equal((await deliver(svc.baseUrl, a, { data: { i } })).status, 202);

  it('verifies the URL, delivers in order with the signature and header; a refresh keeps id and position and replaces the secret; unsubscribe by the key stops it', async () => {
    const a = await createAddress(svc.baseUrl);
    const rx = await hook();
    const request = { name: NAME, arguments: {}, cursor: null, delivery: { mode: 'webhook', url: rx.url, secret: SECRET }, ttlMs: 600_000 };
    const before = Date.now();
    const sub = await result(a.mcpUrl, a.token, 'events/subscribe', request);
    assert.match(sub.id, /^mcp\.event\.[0-9a-f]{32}$/);
    assert.equal(sub.secret, undefined, 'the server never generates or echoes a secret');
    const granted = Date.parse(sub.refreshBefore);
    assert.ok(granted <= Date.now() + 600_000 && granted >= before + 590_000, `refreshBefore ${sub.refreshBefore} is the suggestion`);
    assert.equal(sub.cursor, '0');
    assert.equal(sub.truncated, false);
    assert.equal(sub.deliveryStatus, undefined, 'a new subscription has no delivery status yet');
    // The handshake came first: signed like a delivery, webhook-id msg_verification_…, the subscription's id.
    assert.equal(rx.controls.length, 1);
    const v = rx.controls[0]!;
    verify(v, SECRET);
    assert.equal(occurrence(v).type, 'verification');
    assert.match(occurrence(v).challenge, /^[A-Za-z0-9_-]{20,}$/);
    assert.match(String(v.headers['webhook-id']), /^msg_verification_[0-9a-f]+$/);
    assert.equal(v.headers['x-mcp-subscription-id'], sub.id);
    // It is a push subscription like any other: the REST API shows it, its position is push:<id>.
    assert.equal((await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/subscriptions/${sub.id}`, { token: a.token })).json.consumer, `push:${sub.id}`);

    for (let i = 1; i <= 3; i++) await send(a, i);
    await until(() => rx.received.length >= 3, 20_000, '3 occurrences');
    const shown = () => api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/subscriptions/${sub.id}`, { token: a.token });
    await until(async () => (await shown()).json.cursor === 3 && (await shown()).json.last_success_at !== null, 20_000, 'position 3 stored');

    // The refresh: the same key with a new secret and TTL answers the same id and position, and the delivery status.
    const again = await result(a.mcpUrl, a.token, 'events/subscribe', {
      ...request,
      cursor: '1',
      delivery: { ...request.delivery, secret: SECRET2 },
      ttlMs: 3_600_000,
    });
    assert.equal(again.id, sub.id, 'the id is derived from the key');
    assert.ok(Date.parse(again.refreshBefore) > granted, 'the refresh re-granted the TTL');
    assert.equal(again.cursor, '3', 'the watermark: everything up to 3 acknowledged; the older cursor sent was a no-op');
    assert.equal(again.deliveryStatus.active, true);
    assert.equal(again.deliveryStatus.lastError, null);
    assert.ok(Date.parse(again.deliveryStatus.lastDeliveryAt) >= before, again.deliveryStatus.lastDeliveryAt);
    assert.equal(rx.controls.length, 1, 'a refresh is not challenged again');

    for (let i = 4; i <= 5; i++) await send(a, i);
    await until(() => rx.received.length >= 5, 20_000, '5 occurrences');
    const got = rx.received.map(occurrence);
    assert.deepEqual(
      got.map((o) => o.data.data.i),
      [1, 2, 3, 4, 5],
      'in order, none again after the refresh',
    );
    for (const [n, d] of rx.received.entries()) {
      verify(d, n < 3 ? SECRET : SECRET2); // the refresh replaced the secret
      assert.equal(d.headers['x-mcp-subscription-id'], sub.id);
      const o = got[n];
      assert.equal(o.type, undefined, 'an occurrence has no top-level type');
      assert.equal(o.name, NAME);
      assert.equal(o.eventId, o.data.id);
      assert.equal(d.headers['webhook-id'], o.eventId);
      assert.equal(o.cursor, String(o.data.sequence));
    }

    // Another key to the same URL (other arguments) is covered by the verification; another address is not.
    const narrowed = await result(a.mcpUrl, a.token, 'events/subscribe', { ...request, arguments: { type: 'x.*' } });
    assert.notEqual(narrowed.id, sub.id);
    assert.equal(rx.controls.length, 1, 'verification is per (principal, url), across arguments');
    const b = await createAddress(svc.baseUrl);
    await result(b.mcpUrl, b.token, 'events/subscribe', request);
    assert.equal(rx.controls.length, 2, "one address's verification never waives another's");

    // Unsubscribe by the key; the id is not accepted; a second unsubscribe is NotFound.
    const gone = await call(a.mcpUrl, a.token, 'events/unsubscribe', { name: NAME, arguments: {}, delivery: { url: rx.url } });
    assert.deepEqual(gone.json.result, { resultType: 'complete' }, gone.text);
    assert.equal((await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/subscriptions/${sub.id}`, { token: a.token })).status, 404);
    const twice = await call(a.mcpUrl, a.token, 'events/unsubscribe', { name: NAME, arguments: {}, delivery: { url: rx.url } });
    assert.equal(twice.json.error?.code, -32011, twice.text);
    assert.deepEqual(twice.json.error.data, { kind: 'subscription' });
    const byId = await call(a.mcpUrl, a.token, 'events/unsubscribe', { id: narrowed.id });
    assert.equal(byId.json.error?.code, -32602, byId.text);
    assert.match(byId.json.error.message, /params\.id is not accepted/);

    // A new subscription from cursor 5 (another URL) gets the next events; the unsubscribed key got nothing more.
    for (let i = 6; i <= 7; i++) await send(a, i);
    const rx2 = await hook();
    await result(a.mcpUrl, a.token, 'events/subscribe', { name: NAME, arguments: {}, cursor: '5', delivery: { url: rx2.url, secret: SECRET } });
    await until(() => rx2.received.length >= 2, 20_000, 'events 6 and 7');
    assert.deepEqual(
      rx2.received.map((d) => occurrence(d).data.data.i),
      [6, 7],
    );
    const first = rx.received.filter((d) => d.headers['x-mcp-subscription-id'] === sub.id).length;
    assert.equal(first, 5, 'the unsubscribed key got nothing after events/unsubscribe');
  });

  it('a URL that does not echo the challenge is -32015 with its reason, and nothing is stored or delivered', async () => {
    const a = await createAddress(svc.baseUrl);
    const cases: [Challenge | 'closed', string][] = [
      ['wrong', 'challenge_failed'],
      ['text', 'challenge_failed'],
      [404, 'http_4xx'],
      [503, 'http_5xx'],
      ['closed', 'connection_refused'],
      ['silent', 'timeout'],
      ['huge', 'challenge_failed'],
    ];
    const tried: Hook[] = [];
    for (const [how, reason] of cases) {
      const h = await hook(how === 'closed' ? 'echo' : how);
      if (how === 'closed') await h.close();
      else tried.push(h);
      const r = await call(a.mcpUrl, a.token, 'events/subscribe', { name: NAME, arguments: {}, delivery: { url: h.url, secret: SECRET } });
      assert.equal(r.json?.error?.code, -32015, `${how}: ${r.text}`);
      assert.deepEqual(r.json.error.data, { reason }, `${how}: ${r.text}`);
      assert.match(r.json.error.message, /params\.delivery\.url/);
      assert.doesNotMatch(r.text, /\bno\b"|"ok"/, 'the endpoint answer is never repeated');
    }
    for (const h of tried) assert.equal(h.controls.length, 1, 'one handshake each');
    // An https endpoint whose certificate does not verify (the committed self-signed one, test/fixtures/tls).
    const dir = fileURLToPath(new URL('../../../test/fixtures/tls/', import.meta.url));
    let tlsRequests = 0;
    const tls = https.createServer({ cert: readFileSync(`${dir}cert.pem`), key: readFileSync(`${dir}key.pem`) }, (_req, res) => {
      tlsRequests++;
      res.end('{}');
    });
    await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve));
    try {
      const url = `https://127.0.0.1:${(tls.address() as AddressInfo).port}/hooks`;
      const r = await call(a.mcpUrl, a.token, 'events/subscribe', { name: NAME, arguments: {}, delivery: { url, secret: SECRET } });
      assert.equal(r.json?.error?.code, -32015, r.text);
      assert.deepEqual(r.json.error.data, { reason: 'tls_error' }, r.text);
      assert.equal(tlsRequests, 0, 'no request was sent over a connection that failed verification');
    } finally {
      tls.closeAllConnections();
      await new Promise<void>((resolve) => tls.close(() => resolve()));
    }
    assert.deepEqual(await subs(svc, a), [], 'nothing stored');
    await send(a, 1);
    // A working subscription beside them proves the event was sent out; the failed ones got none.
    const ok = await hook();
    await result(a.mcpUrl, a.token, 'events/subscribe', { name: NAME, arguments: {}, delivery: { url: ok.url, secret: SECRET } });
    await until(() => ok.received.length >= 1, 20_000, 'the event at the verified URL');
    for (const h of tried) assert.equal(h.received.length, 0, 'no event went to an unverified URL');

    // Handshakes per origin are bounded: the 21st within a minute is ResourceExhausted, and sends nothing.
    const flood = await hook('wrong');
    const codes: number[] = [];
    for (let i = 0; i < 21; i++) {
      const r = await call(a.mcpUrl, a.token, 'events/subscribe', { name: NAME, arguments: {}, delivery: { url: `${flood.url}/${i}`, secret: SECRET } });
      codes.push(r.json?.error?.code);
      if (i === 20) assert.deepEqual(r.json.error.data, { limit: 'callbackVerifications', max: 20 }, r.text);
    }
    assert.deepEqual(codes, [...Array(20).fill(-32015), -32013]);
    assert.equal(flood.controls.length, 20);
  });

  it('error codes: -32602 for static errors, -32014 for another mode, -32011 for an unknown name, -32013 at the cap; 401 without the token', async () => {
    const a = await createAddress(svc.baseUrl);
    const rx = await hook();
    const bad: [Record<string, unknown>, number, RegExp, unknown?][] = [
      [{ name: NAME, arguments: {} }, -32602, /params\.delivery/],
      [{ name: NAME, arguments: {}, delivery: { url: 'ftp://x.example', secret: SECRET } }, -32602, /params\.delivery\.url/],
      [{ name: NAME, arguments: {}, delivery: { url: rx.url } }, -32602, /params\.delivery\.secret is required/],
      [{ name: NAME, arguments: {}, delivery: { url: rx.url, secret: 'whsec_c2hvcnQ=' } }, -32602, /params\.delivery\.secret/],
      [{ name: NAME, arguments: {}, delivery: { url: rx.url, secret: SECRET }, ttlMs: 'soon' }, -32602, /params\.ttlMs/],
      [{ name: NAME, arguments: { state: 'all' }, delivery: { url: rx.url, secret: SECRET } }, -32602, /state/],
      [{ name: NAME, arguments: { bogus: 1 }, delivery: { url: rx.url, secret: SECRET } }, -32602, /bogus/],
      [
        { name: NAME, arguments: {}, delivery: { mode: 'push', url: rx.url, secret: SECRET } },
        -32014,
        /deliveryMode|delivery\.mode/,
        { feature: 'deliveryMode', value: 'push' },
      ],
      [{ name: 'nope', arguments: {}, delivery: { url: rx.url, secret: SECRET } }, -32011, /Unknown event type/, { kind: 'event' }],
    ];
    for (const [params, code, why, data] of bad) {
      const r = await call(a.mcpUrl, a.token, 'events/subscribe', params);
      assert.equal(r.json?.error?.code, code, `${JSON.stringify(params)}: ${r.text}`);
      assert.match(r.json.error.message, why);
      if (data !== undefined) assert.deepEqual(r.json.error.data, data);
    }
    const unknown = await call(a.mcpUrl, a.token, 'events/unsubscribe', { name: 'nope', arguments: {}, delivery: { url: rx.url } });
    assert.equal(unknown.json?.error?.code, -32011, unknown.text);
    assert.equal(rx.controls.length, 0, 'no static error sends a handshake');
    // The cap: ten subscriptions, the eleventh is ResourceExhausted before any handshake.
    for (let i = 0; i < 10; i++)
      await result(a.mcpUrl, a.token, 'events/subscribe', { name: NAME, arguments: {}, delivery: { url: `${rx.url}/${i}`, secret: SECRET } });
    const sent = rx.controls.length;
    const full = await call(a.mcpUrl, a.token, 'events/subscribe', { name: NAME, arguments: {}, delivery: { url: `${rx.url}/x`, secret: SECRET } });
    assert.equal(full.json?.error?.code, -32013, full.text);
    assert.deepEqual(full.json.error.data, { limit: 'subscriptions', max: 10 });
    assert.equal(rx.controls.length, sent, 'a subscription that cannot be stored sends no handshake');
    // Every call is authenticated (the principal is the address): another address's token is refused before JSON-RPC.
    const b = await createAddress(svc.baseUrl);
    const foreign = await call(a.mcpUrl, b.token, 'events/subscribe', { name: NAME, arguments: {}, delivery: { url: rx.url, secret: SECRET } });
    assert.equal(foreign.status, 401, foreign.text);
  });

  it('the TTL grant: the suggestion, clamped up to 60 s and down to 366 days; null is no expiry; none is 24 h', async () => {
    const a = await createAddress(svc.baseUrl);
    const rx = await hook();
    const grant = async (i: number, ttl: Record<string, unknown>) =>
      (await result(a.mcpUrl, a.token, 'events/subscribe', { name: NAME, arguments: {}, delivery: { url: `${rx.url}/${i}`, secret: SECRET }, ...ttl }))
        .refreshBefore as string | null;
    const at = Date.now();
    const day = 24 * 3600_000;
    const short = Date.parse((await grant(1, { ttlMs: 5 }))!);
    assert.ok(short >= at + 60_000 && short <= Date.now() + 60_000, 'clamped up to the 60 s floor');
    const long = Date.parse((await grant(2, { ttlMs: 3650 * day }))!);
    assert.ok(long >= at + 366 * day && long <= Date.now() + 366 * day, 'clamped down to 366 days');
    const none = Date.parse((await grant(3, {}))!);
    assert.ok(none >= at + day && none <= Date.now() + day, 'the default is 24 h');
    assert.equal(await grant(4, { ttlMs: null }), null, 'null asked, no expiry granted');
    const rows = await subs(svc, a);
    assert.equal(rows.find((s: any) => s.url.endsWith('/4')).expires_at, null);
    // A finite suggestion on refresh turns a no-expiry subscription finite again.
    assert.ok(Date.parse((await grant(4, { ttlMs: 120_000 }))!) <= Date.now() + 120_000);
  });

  it('a 413 is not retried (the event is given up, the rest follow); a 410 pauses until a refresh reactivates it', async () => {
    const a = await createAddress(svc.baseUrl);
    const rx = await hook('echo', (d) => (occurrence(d).data.data.i === 1 ? 413 : 200));
    await result(a.mcpUrl, a.token, 'events/subscribe', { name: NAME, arguments: {}, delivery: { url: rx.url, secret: SECRET } });
    for (let i = 1; i <= 3; i++) await send(a, i);
    await until(() => rx.received.length >= 3, 20_000, 'events 1 (413), 2, 3');
    assert.deepEqual(
      rx.received.map((d) => occurrence(d).data.data.i),
      [1, 2, 3],
      'event 1 was tried once (a retry would come before 2)',
    );

    const b = await createAddress(svc.baseUrl);
    let gone = true;
    const rx2 = await hook('echo', () => (gone ? 410 : 200));
    const request = { name: NAME, arguments: {}, delivery: { url: rx2.url, secret: SECRET } };
    const sub = await result(b.mcpUrl, b.token, 'events/subscribe', request);
    for (let i = 1; i <= 2; i++) await send(b, i);
    const shown = async () => (await api(svc.baseUrl, 'GET', `/api/v1/addresses/${b.id}/subscriptions/${sub.id}`, { token: b.token })).json;
    await until(async () => (await shown()).state === 'paused', 20_000, 'paused by the 410');
    assert.equal(rx2.received.length, 1, 'the 410 was not retried, and nothing after it was sent');
    gone = false;
    const refreshed = await result(b.mcpUrl, b.token, 'events/subscribe', request);
    assert.equal(refreshed.deliveryStatus.active, false, 'the status before this refresh');
    assert.equal(refreshed.deliveryStatus.lastError, 'http_4xx', 'a category, never the answer itself');
    await until(() => rx2.received.length >= 3, 20_000, 'the refresh reactivated delivery');
    assert.deepEqual(
      rx2.received.map((d) => occurrence(d).data.data.i),
      [1, 1, 2],
    );
    assert.equal((await shown()).state, 'active');
  });

  it('many identical subscribes at once are one subscription and one handshake; a large event is a raw.url reference', async () => {
    const a = await createAddress(svc.baseUrl);
    const rx = await hook();
    const same = { name: NAME, arguments: { type: 'x.*' }, delivery: { url: rx.url, secret: SECRET }, ttlMs: 120_000 };
    const answers = await Promise.all(Array.from({ length: 20 }, () => call(a.mcpUrl, a.token, 'events/subscribe', same)));
    for (const r of answers) assert.equal(r.status, 200, r.text);
    assert.equal(new Set(answers.map((r) => r.json.result?.id)).size, 1, answers.map((r) => r.text).join('\n'));
    assert.equal(rx.controls.length, 1, 'concurrent subscribes to one URL share one handshake');
    assert.equal((await subs(svc, a)).length, 1);

    const rx2 = await hook();
    await result(a.mcpUrl, a.token, 'events/subscribe', { name: NAME, arguments: {}, delivery: { url: rx2.url, secret: SECRET } });
    assert.equal((await deliver(svc.baseUrl, a, { data: { blob: 'x'.repeat(300 * 1024) } })).status, 202);
    await until(() => rx2.received.length >= 1, 20_000, 'the large occurrence');
    const d = rx2.received[0]!;
    assert.ok(Buffer.byteLength(d.body) <= 256 * 1024, `body ${Buffer.byteLength(d.body)} bytes`);
    verify(d, SECRET);
    const o = occurrence(d);
    assert.equal(o.data.data.omitted, true);
    const whole = await api('', 'GET', o.data.data.raw.url, { token: a.token });
    assert.equal(whole.json.events[0].data.blob.length, 300 * 1024, 'the reference answers the whole event');
  });
});

describe(`MCP events/subscribe on a public instance refuses inside targets (${STORE})`, () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({});
  });
  after(async () => svc.stop());

  it('loopback, private, link-local and [::1] URLs are -32602 naming params.delivery.url, and never contacted, not even for the handshake', async () => {
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
      assert.equal((await deliver(svc.baseUrl, a, { data: { i: 0 } })).status, 202);
      assert.deepEqual(await subs(svc, a), []);
      assert.equal(rx.connections(), 0, 'the receiver was never contacted');
      assert.equal((await api(svc.baseUrl, 'GET', '/healthz')).status, 200);
    } finally {
      await rx.close();
    }
  });
});
