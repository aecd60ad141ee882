// Webhook subscriptions, black box on the running service (real sockets, a real local receiver,
// PUSH_ALLOW_PRIVATE=true so http://127.0.0.1 may be a target): every event POSTed alone, in order,
// with a Standard Webhooks signature that verifies; a failing event retried on the schedule with
// nothing after it sent first; a receiver that was down gets everything once back; the schedule's
// end and an abort answer pause the subscription, resume goes on; the position is the consumer
// push:<id>. A liveness probe runs beside each.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ReturnAddress } from '@return-address/client';
import { type Addr, api, createAddress, deliver, freePort, STORE, startTestService, type TestService } from '../helpers.js';
import { LIVENESS_MS, type LivenessProbe, startLivenessProbe } from '../liveness-probe.js';
import { type Answer, type Delivery, startReceiver, until, verify } from './receiver.js';

const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

describe(`push subscriptions deliver in order (${STORE})`, () => {
  let svc: TestService;
  let probe: LivenessProbe;
  before(async () => {
    svc = await startTestService({
      METRICS_PORT: '0',
      PUSH_ALLOW_PRIVATE: 'true',
      PUSH_RETRY_SCHEDULE_MS: '0,100,100,100,100,100,100,100,100,100,100,100,100,100,100,100,100,100,100,100',
    });
    probe = startLivenessProbe(svc.baseUrl);
  });
  after(async () => {
    const p = await probe.stop();
    assert.deepEqual(p.failures, []);
    assert.ok(p.maxMs < LIVENESS_MS, `/healthz answered within ${LIVENESS_MS} ms beside deliveries (slowest ${p.maxMs.toFixed(0)} ms)`);
    await svc.stop();
  });

  const subscribe = (a: Addr, json: Record<string, unknown>) => api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/subscriptions`, { json, token: a.token });
  const show = (a: Addr, id: string) => api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/subscriptions/${id}`, { token: a.token });
  const seqs = (ds: Delivery[]) => ds.map((d) => d.event.sequence);

  it('20 events arrive one per POST, in order, signed (webhook-id = event id); the position is the consumer push:<id>', async () => {
    const rx = await startReceiver();
    try {
      const a = await createAddress(svc.baseUrl);
      const created = await subscribe(a, { url: rx.url, secret: SECRET });
      assert.equal(created.status, 201, created.text);
      const sub = created.json;
      assert.match(sub.id, /^sub_[0-9a-f]{20}$/);
      assert.equal(sub.consumer, `push:${sub.id}`);
      assert.equal(sub.secret, undefined, 'a given secret is never echoed');
      for (let i = 1; i <= 20; i++) assert.equal((await deliver(svc.baseUrl, a, { data: { i } })).status, 202);
      await until(() => rx.received.length >= 20, 20_000, '20 deliveries');
      assert.deepEqual(
        seqs(rx.received),
        Array.from({ length: 20 }, (_, i) => i + 1),
        'in sequence order, each once',
      );
      for (const d of rx.received) {
        verify(d, SECRET);
        assert.equal(d.headers['webhook-id'], d.event.id);
        assert.equal(d.headers['content-type'], 'application/json');
        assert.equal(d.event.address_id, a.id);
      }
      assert.deepEqual(
        rx.received.map((d) => d.event.data.i),
        Array.from({ length: 20 }, (_, i) => i + 1),
      );
      assert.throws(() => verify(rx.received[0]!, `whsec_${Buffer.alloc(32, 8).toString('base64')}`), 'another secret does not verify');
      await until(async () => (await show(a, sub.id)).json.cursor === 20, 5000, 'cursor 20');
      const consumers = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/consumers`, { token: a.token });
      assert.deepEqual(
        consumers.json.consumers.map((c: { name: string; cursor: number }) => [c.name, c.cursor]),
        [[`push:${sub.id}`, 20]],
      );
      const s = (await show(a, sub.id)).json;
      assert.equal(s.state, 'active');
      assert.equal(s.last_status, 200);
      const metrics = await (await fetch(svc.running.metrics!.url)).text();
      const delivered = Number(/^return_address_push_attempts_total\{outcome="delivered"\} (\d+)/m.exec(metrics)?.[1]);
      assert.ok(delivered >= 20, `attempts counted by outcome: ${delivered}`);
      assert.match(metrics, /^return_address_push_lag_seconds_count \d+/m);
      assert.match(metrics, /^return_address_push_subscriptions_paused \d+/m);
      // A reader takes over by pull from the same position: nothing after 20 yet.
      const pulled = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events?consumer=push:${sub.id}`, { token: a.token });
      assert.deepEqual(pulled.json.events, []);
    } finally {
      await rx.close();
    }
  });

  it('a generated secret is shown once and signs; a type filter passes over the rest', async () => {
    const rx = await startReceiver();
    try {
      const a = await createAddress(svc.baseUrl);
      const created = await subscribe(a, { url: rx.url, type: 'keep.*' });
      assert.equal(created.status, 201, created.text);
      const secret = created.json.secret as string;
      assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      assert.equal((await show(a, created.json.id)).json.secret, undefined, 'never shown again');
      await deliver(svc.baseUrl, a, { type: 'keep.one', data: { n: 1 } });
      await deliver(svc.baseUrl, a, { type: 'drop.two', data: { n: 2 } });
      await deliver(svc.baseUrl, a, { type: 'keep.three', data: { n: 3 } });
      await until(async () => (await show(a, created.json.id)).json.cursor === 3, 10_000, 'position past all three');
      assert.deepEqual(
        rx.received.map((d) => d.event.type),
        ['keep.one', 'keep.three'],
      );
      for (const d of rx.received) verify(d, secret);
    } finally {
      await rx.close();
    }
  });

  it('a 500 for one event: retried, and nothing after it is sent until it succeeds', async () => {
    let failures = 0;
    const rx = await startReceiver((d): Answer => {
      if (d.event.sequence === 3 && failures < 3) {
        failures++;
        return { status: 500 };
      }
      return { status: 200 };
    });
    try {
      const a = await createAddress(svc.baseUrl);
      const sub = (await subscribe(a, { url: rx.url, secret: SECRET })).json;
      for (let i = 1; i <= 6; i++) await deliver(svc.baseUrl, a, { data: { i } });
      await until(() => rx.received.length >= 9, 20_000, '6 events and 3 retries');
      assert.deepEqual(seqs(rx.received), [1, 2, 3, 3, 3, 3, 4, 5, 6]);
      const ids = rx.received.filter((d) => d.event.sequence === 3).map((d) => d.headers['webhook-id']);
      assert.equal(new Set(ids).size, 1, 'the same webhook-id on every retry');
      await until(async () => (await show(a, sub.id)).json.cursor === 6, 5000, 'cursor 6');
      assert.equal((await show(a, sub.id)).json.attempts, 0);
    } finally {
      await rx.close();
    }
  });

  it('a receiver that is down gets everything, in order, once it is back', async () => {
    const port = await freePort();
    const a = await createAddress(svc.baseUrl);
    const sub = (await subscribe(a, { url: `http://127.0.0.1:${port}/hooks`, secret: SECRET })).json;
    for (let i = 1; i <= 5; i++) await deliver(svc.baseUrl, a, { data: { i } });
    await until(async () => (await show(a, sub.id)).json.attempts >= 2, 10_000, 'failed attempts while down');
    const down = (await show(a, sub.id)).json;
    assert.equal(down.state, 'retrying');
    assert.equal(down.cursor, 0);
    assert.equal(down.last_status, null);
    assert.match(down.last_error, /ECONNREFUSED/);
    const rx = await startReceiver(undefined, port);
    try {
      await until(() => rx.received.length >= 5, 20_000, 'all 5 after the receiver came back');
      assert.deepEqual(seqs(rx.received), [1, 2, 3, 4, 5]);
    } finally {
      await rx.close();
    }
  });

  it('the schedule running out pauses with the reason; resume sends the failed event again, then the rest', async () => {
    let ok = false;
    const rx = await startReceiver(() => ({ status: ok ? 200 : 503 }));
    try {
      const a = await createAddress(svc.baseUrl);
      const sub = (await subscribe(a, { url: rx.url, secret: SECRET })).json;
      await deliver(svc.baseUrl, a, { data: { i: 1 } });
      await deliver(svc.baseUrl, a, { data: { i: 2 } });
      await until(async () => (await show(a, sub.id)).json.state === 'paused', 20_000, 'paused');
      const paused = (await show(a, sub.id)).json;
      assert.equal(paused.attempts, 20, 'every attempt of the schedule');
      assert.match(paused.paused_reason, /20 attempts .* failed; the last: answered 503/);
      assert.equal(rx.received.length, 20);
      assert.ok(
        rx.received.every((d) => d.event.sequence === 1),
        'nothing after the failing event',
      );
      ok = true;
      const resumed = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/subscriptions/${sub.id}/resume`, { token: a.token });
      assert.equal(resumed.status, 200, resumed.text);
      await until(() => rx.received.length >= 22, 10_000, 'both after resume');
      assert.deepEqual(seqs(rx.received.slice(20)), [1, 2]);
    } finally {
      await rx.close();
    }
  });

  it('webhook-delivery: abort pauses at once; Retry-After holds the retry back', async () => {
    const rx = await startReceiver(
      (d, i): Answer =>
        d.event.data.abort
          ? { status: 410, headers: { 'webhook-delivery': 'abort' } }
          : i === 0
            ? { status: 429, headers: { 'retry-after': '1' } }
            : { status: 200 },
    );
    try {
      const a = await createAddress(svc.baseUrl);
      const sub = (await subscribe(a, { url: rx.url, secret: SECRET })).json;
      await deliver(svc.baseUrl, a, { data: { i: 1 } });
      await until(() => rx.received.length >= 2, 10_000, 'the retry after Retry-After');
      const ts = rx.received.map((d) => Number(d.headers['webhook-timestamp']));
      // Whole seconds: a retry held back 1 s cannot carry the first attempt's second (the schedule alone says 100 ms).
      assert.ok(ts[1]! - ts[0]! >= 1, `the retry came no sooner than Retry-After (1 s) allows: ${ts.join(', ')}`);
      await deliver(svc.baseUrl, a, { data: { abort: true } });
      await deliver(svc.baseUrl, a, { data: { i: 3 } });
      await until(async () => (await show(a, sub.id)).json.state === 'paused', 10_000, 'paused by abort');
      const s = (await show(a, sub.id)).json;
      assert.match(s.paused_reason, /webhook-delivery: abort/);
      assert.equal(s.attempts, 1, 'no retry after an abort');
      assert.deepEqual(seqs(rx.received), [1, 1, 2]);
    } finally {
      await rx.close();
    }
  });

  it('the TypeScript client subscribes, lists, shows, resumes and unsubscribes, typed from the route schemas', async () => {
    const rx = await startReceiver();
    try {
      const ra = await ReturnAddress.create({ url: svc.baseUrl });
      const sub = await ra.subscribe({ url: rx.url, type: 'client.*' });
      assert.match(sub.secret ?? '', /^whsec_/);
      assert.equal(sub.consumer, `push:${sub.id}`);
      assert.deepEqual(
        (await ra.subscriptions()).map((s) => s.id),
        [sub.id],
      );
      await api(svc.baseUrl, 'POST', ra.inboxUrl!, { json: { type: 'client.hello', data: {} } });
      await until(() => rx.received.length >= 1, 10_000, 'one delivery');
      verify(rx.received[0]!, sub.secret!);
      assert.equal((await ra.subscription(sub.id)).state, 'active');
      assert.equal((await ra.resumeSubscription(sub.id)).id, sub.id);
      await ra.unsubscribe(sub.id);
      assert.deepEqual(await ra.subscriptions(), []);
    } finally {
      await rx.close();
    }
  });
});
