// Webhook connections and the lag in events, black box on the running service (real sockets, a real
// local receiver, PUSH_ALLOW_PRIVATE=true, targets named through the test's DNS so every guarded
// lookup is counted): 20 events ride a few kept-alive connections, and the lookup (the address rule)
// ran once per NEW connection; a kept connection goes on without a lookup while a name that stops
// resolving is refused on the next new one; a receiver that closes kept-alive connections under the
// next request costs no failed attempt (one retry on a fresh connection); and
// return_address_push_lag_events counts the sequences a held or refused subscription is behind,
// back to 0 once the receiver accepts. A liveness probe runs beside it all.
import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { after, afterEach, before, describe, it } from 'node:test';
import { postWebhook, WebhookAgents } from '../../src/push/webhook-post.js';
import { type Addr, api, createAddress, deliver, STORE, startTestService, type TestService } from '../helpers.js';
import { LIVENESS_MS, type LivenessProbe, startLivenessProbe } from '../liveness-probe.js';
import { type Answer, type Receiver, startReceiver, until, verify } from './receiver.js';

const SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;

describe(`push connections are kept alive, guarded per new connection; lag in events (${STORE})`, () => {
  let svc: TestService;
  let probe: LivenessProbe;
  // The test's DNS: every name resolves to loopback and is counted, unless the test took it away.
  const lookups = new Map<string, number>();
  const gone = new Set<string>();
  const resolve = async (host: string): Promise<LookupAddress[]> => {
    lookups.set(host, (lookups.get(host) ?? 0) + 1);
    return gone.has(host) ? [] : [{ address: '127.0.0.1', family: 4 }];
  };
  before(async () => {
    svc = await startTestService(
      { METRICS_PORT: '0', PUSH_ALLOW_PRIVATE: 'true', PUSH_RETRY_SCHEDULE_MS: Array.from({ length: 20 }, (_, i) => (i === 0 ? 0 : 1500)).join(',') },
      undefined,
      { pushResolve: resolve },
    );
    probe = startLivenessProbe(svc.baseUrl);
  });
  after(async () => {
    const p = await probe.stop();
    assert.deepEqual(p.failures, []);
    assert.ok(p.maxMs < LIVENESS_MS, `/healthz answered within ${LIVENESS_MS} ms beside deliveries (slowest ${p.maxMs.toFixed(0)} ms)`);
    await svc.stop();
  });

  // Each test's subscriptions are deleted after it, passed or not: the lag gauge counts every one this instance delivers.
  let made: [Addr, string][] = [];
  afterEach(async () => {
    for (const [a, id] of made) await api(svc.baseUrl, 'DELETE', `/api/v1/addresses/${a.id}/subscriptions/${id}`, { token: a.token });
    made = [];
  });
  const subscribe = async (a: Addr, url: string) => {
    const r = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/subscriptions`, { json: { url, secret: SECRET }, token: a.token });
    assert.equal(r.status, 201, r.text);
    made.push([a, r.json.id]);
    return r.json.id as string;
  };
  const show = async (a: Addr, id: string) => (await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/subscriptions/${id}`, { token: a.token })).json;
  const metrics = async () => (await fetch(svc.running.metrics!.url)).text();
  const series = (text: string, re: RegExp) => Number(re.exec(text)?.[1] ?? Number.NaN);
  const attempts = async (outcome: string) => series(await metrics(), new RegExp(`^return_address_push_attempts_total\\{outcome="${outcome}"\\} (\\d+)`, 'm'));
  const lag = async () => {
    const text = await metrics();
    return {
      max: series(text, /^return_address_push_lag_events\{aggregate="max"\} (\d+)/m),
      total: series(text, /^return_address_push_lag_events\{aggregate="total"\} (\d+)/m),
    };
  };
  /** The receiver's URL under a name of the test's DNS. */
  const named = (rx: Receiver, host: string) => rx.url.replace('127.0.0.1', host);

  it('20 events to one receiver ride far fewer than 20 connections, and each new connection was looked up (guarded) once', async (t) => {
    const rx = await startReceiver();
    try {
      const a = await createAddress(svc.baseUrl);
      await subscribe(a, named(rx, 'keep.test'));
      for (let i = 1; i <= 20; i++) assert.equal((await deliver(svc.baseUrl, a, { data: { i } })).status, 202);
      await until(() => rx.received.length >= 20, 20_000, '20 deliveries');
      assert.deepEqual(
        rx.received.map((d) => d.event.sequence),
        Array.from({ length: 20 }, (_, i) => i + 1),
      );
      for (const d of rx.received) verify(d, SECRET);
      t.diagnostic(`20 deliveries over ${rx.connections()} connection(s)`);
      assert.ok(rx.connections() <= 5, `20 deliveries over ${rx.connections()} connections`);
      assert.equal(lookups.get('keep.test'), rx.connections(), 'one guarded lookup per new connection, none per reuse');
    } finally {
      await rx.close();
    }
  });

  it('a kept connection goes on without a lookup; once it is closed, the next new connection runs the guard again and is refused', async () => {
    const rx = await startReceiver();
    try {
      const a = await createAddress(svc.baseUrl);
      const id = await subscribe(a, named(rx, 'flip.test'));
      await deliver(svc.baseUrl, a, { data: { i: 1 } });
      await until(async () => (await show(a, id)).cursor === 1, 10_000, 'the first delivered');
      gone.add('flip.test'); // from now on the name resolves to nothing: any new connection is refused
      await deliver(svc.baseUrl, a, { data: { i: 2 } });
      await until(async () => (await show(a, id)).cursor === 2, 10_000, 'the second delivered on the kept connection');
      assert.equal(rx.connections(), 1);
      assert.equal(lookups.get('flip.test'), 1, 'the kept connection was not looked up again');
      rx.dropConnections();
      await deliver(svc.baseUrl, a, { data: { i: 3 } });
      await until(async () => (await show(a, id)).last_error !== null, 10_000, 'the third refused');
      const s = await show(a, id);
      assert.match(s.last_error, /flip\.test does not resolve/);
      assert.equal(s.cursor, 2);
      assert.equal(rx.received.length, 2, 'the refused connection sent nothing');
      assert.ok(lookups.get('flip.test')! >= 2, 'the new connection was looked up');
    } finally {
      await rx.close();
    }
  });

  it('a receiver that closes a kept-alive connection under the next request costs no failed attempt: one retry on a fresh connection', async () => {
    const rx = await startReceiver(undefined, 0, 0, { dropReused: true });
    try {
      const failedBefore = await attempts('failed');
      const a = await createAddress(svc.baseUrl);
      const id = await subscribe(a, named(rx, 'drop.test'));
      for (let i = 1; i <= 10; i++) await deliver(svc.baseUrl, a, { data: { i } });
      await until(async () => (await show(a, id)).cursor === 10, 20_000, 'all 10 delivered');
      assert.deepEqual(
        rx.received.map((d) => d.event.sequence),
        Array.from({ length: 10 }, (_, i) => i + 1),
      );
      assert.ok(rx.dropped() >= 1, `a reused connection was closed under a request (${rx.dropped()} times)`);
      const s = await show(a, id);
      assert.equal(s.attempts, 0);
      assert.equal(s.last_error, null);
      assert.equal(await attempts('failed'), failedBefore, 'no failed attempt counted');
      assert.equal(lookups.get('drop.test'), rx.connections(), 'the fresh connections were guarded too');
    } finally {
      await rx.close();
    }
  });

  it('lag in events: a held receiver leaves N sequences behind, shown by the gauge; 0 once it answers', async () => {
    let release!: () => void;
    const hold = new Promise<void>((r) => {
      release = r;
    });
    const rx = await startReceiver(undefined, 0, 0, { hold });
    try {
      await until(async () => (await lag()).total === 0, 10_000, 'no lag left from before');
      const a = await createAddress(svc.baseUrl);
      const id = await subscribe(a, named(rx, 'hold.test'));
      await deliver(svc.baseUrl, a, { data: { i: 1 } });
      await until(() => rx.received.length === 1, 10_000, 'the first request held');
      for (let i = 2; i <= 7; i++) await deliver(svc.baseUrl, a, { data: { i } });
      await until(async () => (await lag()).max === 7, 10_000, 'the gauge at 7 behind while the first is held');
      assert.deepEqual(await lag(), { max: 7, total: 7 });
      release();
      await until(async () => (await show(a, id)).cursor === 7, 10_000, 'all 7 delivered');
      await until(async () => (await lag()).total === 0, 10_000, 'the gauge back at 0');
      assert.equal(rx.received.length, 7);
    } finally {
      release();
      await rx.close();
    }
  });

  it('lag in events: a refusing receiver leaves N behind while it retries; 0 after it accepts', async () => {
    let accept = false;
    const rx = await startReceiver((): Answer => ({ status: accept ? 200 : 503 }));
    try {
      const a = await createAddress(svc.baseUrl);
      const id = await subscribe(a, named(rx, 'refuse.test'));
      for (let i = 1; i <= 5; i++) await deliver(svc.baseUrl, a, { data: { i } });
      await until(async () => (await show(a, id)).attempts >= 1, 10_000, 'a refused attempt');
      await until(async () => (await lag()).max === 5, 10_000, 'the gauge at 5 behind');
      assert.deepEqual(await lag(), { max: 5, total: 5 });
      assert.equal((await show(a, id)).cursor, 0);
      accept = true;
      await until(async () => (await show(a, id)).cursor === 5, 20_000, 'all 5 delivered after the receiver accepts');
      await until(async () => (await lag()).total === 0, 10_000, 'the gauge back at 0');
    } finally {
      await rx.close();
    }
  });
});

describe('webhook connections: the age bound (webhook-post.ts, no service)', () => {
  const body = JSON.stringify({ id: 'evt_1', address_id: 'addr_x', sequence: 1, type: 't', data: {} });
  const post = (rx: Receiver, agents: WebhookAgents, i: number) =>
    postWebhook({
      url: rx.url,
      secret: SECRET,
      messageId: `evt_${i}`,
      body,
      timeoutMs: 10_000,
      allowPrivate: true,
      resolve: async () => [{ address: '127.0.0.1', family: 4 }],
      agents,
    });

  it('a connection past its age is closed after its answer and the next attempt opens (and checks) a new one; a young one is reused', async () => {
    for (const [maxAgeMs, expected] of [
      [0, 5],
      [3_600_000, 1],
    ] as const) {
      const rx = await startReceiver();
      const agents = new WebhookAgents(8, 4000, maxAgeMs);
      try {
        for (let i = 1; i <= 5; i++) assert.equal((await post(rx, agents, i)).status, 200);
        assert.equal(rx.connections(), expected, `max age ${maxAgeMs} ms: 5 attempts over ${rx.connections()} connections`);
        assert.equal(rx.received.length, 5);
      } finally {
        agents.destroy();
        await rx.close();
      }
    }
  });
});
