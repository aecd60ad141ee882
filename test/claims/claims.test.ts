// Claims (design.md, "Claims"): leases, fencing, extend, nack (delayed, dead), max_deliveries, the
// claim long-poll's wake-ups, and the input's bounds.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parseEventFilter } from '../../src/domain/event-filter.js';
import { type Addr, api, createAddress, deliver, listEvents, range, sleep } from '../helpers.js';
import { type InjectedService, startInjectedService } from '../inject.js';

/** A waiting claim's wait, and the bound a wake must beat: half of it, so a wake by the wait's end fails. */
const WAIT_SECONDS = 20;
const HALF_WAIT_MS = (WAIT_SECONDS * 1000) / 2;

describe('claims', () => {
  let svc: InjectedService;
  let base: string;
  before(async () => {
    svc = await startInjectedService();
    base = svc.baseUrl;
  });
  after(() => svc.stop());

  const claim = (a: Addr, json?: unknown) => api(base, 'POST', `/api/v1/addresses/${a.id}/claims`, { token: a.token, ...(json === undefined ? {} : { json }) });
  const settle = (a: Addr, lease: string, verb: string, json?: unknown) =>
    api(base, 'POST', `/api/v1/addresses/${a.id}/claims/${lease}/${verb}`, { token: a.token, ...(json === undefined ? {} : { json }) });
  const seqs = (r: { json: { claims: { event: { sequence: number } }[] } }) => r.json.claims.map((c) => c.event.sequence);
  const dead = async (a: Addr) => (await svc.store.scanEvents(a.id, 0, parseEventFilter({ state: 'dead' }), 100, 1 << 20))!.events;

  it('leases the oldest claimable events once each; ack, extend and nack go through the lease; a superseded lease gets 409 lease_lost', async () => {
    const a = await createAddress(base);
    for (const i of range(1, 3)) assert.equal((await deliver(base, a, { data: { i } })).status, 202);
    const first = await claim(a, { max: 2 });
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(seqs(first), [1, 2]);
    const [c1, c2] = first.json.claims;
    assert.match(c1.lease_id, /^lease_[0-9a-z]{26}_[A-Za-z0-9_-]{20}$/);
    assert.equal(c1.delivery_count, 1);
    assert.equal(c1.event.delivery_count, 1);
    assert.ok(Date.parse(c1.lease_expires_at) - Date.now() > 55_000, 'the default lease is 60 s');
    const second = await claim(a); // no body: one event
    assert.deepEqual(seqs(second), [3]);
    const c3 = second.json.claims[0];
    assert.deepEqual((await claim(a, {})).json, { claims: [] }, 'nothing is claimable while every event holds a live lease');

    const acked = await settle(a, c1.lease_id, 'ack');
    assert.equal(acked.status, 200, acked.text);
    assert.ok(acked.json.event.acknowledged_at);
    const again = await settle(a, c1.lease_id, 'ack');
    assert.equal(again.json.event.acknowledged_at, acked.json.event.acknowledged_at, 'an ack through the same lease is idempotent');

    const extended = await settle(a, c2.lease_id, 'extend', { lease_seconds: 600 });
    assert.equal(extended.status, 200, extended.text);
    assert.ok(Date.parse(extended.json.lease_expires_at) - Date.now() > 590_000);

    const nacked = await settle(a, c3.lease_id, 'nack', { reason: 'try later' });
    assert.equal(nacked.status, 200, nacked.text);
    assert.equal(nacked.json.event.dead_at, undefined);
    const re = await claim(a);
    assert.deepEqual(seqs(re), [3], 'a nacked event is claimable again at once');
    assert.equal(re.json.claims[0].delivery_count, 2);
    assert.notEqual(re.json.claims[0].lease_id, c3.lease_id);
    for (const verb of ['ack', 'extend', 'nack']) {
      const lost = await settle(a, c3.lease_id, verb);
      assert.equal(lost.status, 409, `${verb}: ${lost.text}`);
      assert.equal(lost.json.error.code, 'lease_lost');
    }
    // Cursor reads see every event, with the claim fields.
    const page = await listEvents(base, a);
    assert.deepEqual(
      page.json.events.map((e: { delivery_count?: number }) => e.delivery_count),
      [1, 1, 2],
    );
    assert.ok(page.json.events[0].acknowledged_at);
    // The plain ack (POST /api/v1/addresses/{id}/events/{eventId}/ack) still works on a claimed event; its lease's ack then answers the same.
    const plain = await api(base, 'POST', `/api/v1/addresses/${a.id}/events/${c2.event.id}/ack`, { token: a.token });
    assert.equal(plain.status, 200);
    assert.equal((await settle(a, c2.lease_id, 'ack')).json.event.acknowledged_at, plain.json.event.acknowledged_at);
  });

  it('max_deliveries: the last nack makes the event dead; dead: true kills at once; dead events are never claimed and list with state=dead', async () => {
    const a = await createAddress(base);
    await deliver(base, a, { type: 'job', data: 1 });
    await deliver(base, a, { type: 'job', data: 2 });
    const l1 = (await claim(a, { max_deliveries: 2 })).json.claims[0];
    assert.equal(l1.event.sequence, 1);
    await settle(a, l1.lease_id, 'nack');
    const l2 = (await claim(a, { max_deliveries: 2 })).json.claims[0];
    assert.equal(l2.event.sequence, 1);
    const died = await settle(a, l2.lease_id, 'nack', { reason: 'boom' });
    assert.ok(died.json.event.dead_at, died.text);
    assert.equal(died.json.event.dead_reason, 'nacked on delivery 2 of max_deliveries 2: boom');
    const l3 = (await claim(a)).json.claims[0];
    assert.equal(l3.event.sequence, 2, 'the dead event is skipped');
    const poisoned = await settle(a, l3.lease_id, 'nack', { dead: true, reason: 'poison' });
    assert.equal(poisoned.json.event.dead_reason, 'poison');
    assert.deepEqual((await claim(a, { max: 10 })).json.claims, []);
    assert.deepEqual(
      (await dead(a)).map((e) => [e.sequence, e.deadReason]),
      [
        [1, 'nacked on delivery 2 of max_deliveries 2: boom'],
        [2, 'poison'],
      ],
    );
    assert.equal((await settle(a, l3.lease_id, 'ack')).json.error.code, 'lease_lost', 'a dead event cannot be acked through its lease');
    const listed = await listEvents(base, a, { state: 'dead' });
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(
      listed.json.events.map((e: { sequence: number; dead_reason: string }) => [e.sequence, e.dead_reason]),
      [
        [1, 'nacked on delivery 2 of max_deliveries 2: boom'],
        [2, 'poison'],
      ],
    );
  });

  it('a filtered claim leases only matching events', async () => {
    const a = await createAddress(base);
    await deliver(base, a, { type: 'github.push', data: { repo: 'x' } });
    await deliver(base, a, { type: 'stripe.paid', data: { amount: 5 } });
    await deliver(base, a, { type: 'github.issue', data: { repo: 'y' } });
    assert.deepEqual(seqs(await claim(a, { type: 'stripe.*', max: 10 })), [2]);
    assert.deepEqual(seqs(await claim(a, { type: ['github.*'], match: { 'data.repo': 'y' }, max: 10 })), [3]);
    assert.deepEqual(seqs(await claim(a, { match: ['data.repo=x'], max: 10 })), [1]);
  });

  // Woken by the event, not by the wait's end: each wait is 20 s, and each claim must come back well
  // before half of it. Milliseconds on a quiet machine; a bound in milliseconds failed a busy one.
  it("a waiting claim wakes on a delivery and on a nack, and at a delayed nack's end, long before its wait ends", async () => {
    const a = await createAddress(base);
    const t0 = Date.now();
    const held = claim(a, { wait: WAIT_SECONDS });
    await sleep(200);
    const d = await deliver(base, a, { data: 'now' });
    const woke = await held;
    assert.deepEqual(seqs(woke), [1]);
    assert.ok(Date.now() - t0 < HALF_WAIT_MS, `woke after ${Date.now() - t0} ms`);

    const held2 = claim(a, { wait: WAIT_SECONDS });
    await sleep(200);
    const tNack = Date.now();
    await settle(a, woke.json.claims[0].lease_id, 'nack');
    const r2 = await held2;
    assert.deepEqual(seqs(r2), [1]);
    assert.ok(Date.now() - tNack < HALF_WAIT_MS, `woke ${Date.now() - tNack} ms after the nack`);
    assert.equal(d.json.event.sequence, 1);

    await settle(a, r2.json.claims[0].lease_id, 'nack', { delay_seconds: 1 });
    const tDelay = Date.now();
    assert.deepEqual((await claim(a)).json.claims, [], 'delayed');
    const r3 = await claim(a, { wait: WAIT_SECONDS });
    const waited = Date.now() - tDelay;
    assert.deepEqual(seqs(r3), [1]);
    // Never before the delay's end (a busy machine only makes it later), and at its end, not the wait's.
    assert.ok(waited >= 950 && waited < HALF_WAIT_MS, `claimable after the 1 s delay: ${waited} ms`);
  });

  it('a lease that runs out: redelivered to a waiting claim at once; the old lease may ack until superseded; after max_deliveries the event dies', async () => {
    const a = await createAddress(base);
    await deliver(base, a, { data: 'a' });
    await deliver(base, a, { data: 'b' });
    const la = (await claim(a, { lease_seconds: 5, max_deliveries: 2 })).json.claims[0];
    const lb = (await claim(a, { lease_seconds: 5, max_deliveries: 1 })).json.claims[0];
    // Both leases run out: event 1 is taken again by the waiting claim at once; event 2, on its final
    // delivery, is made dead by that same claim.
    const tWait = Date.now();
    const expired = await claim(a, { wait: WAIT_SECONDS, lease_seconds: 5, max: 2 });
    const expiry = Date.parse(la.lease_expires_at);
    // At the lease's end (5 s), not at the wait's (20 s): the wake is the lease running out.
    assert.ok(Date.now() >= expiry, 'not before the lease ended');
    assert.ok(Date.now() - expiry < HALF_WAIT_MS - 5000, `woke ${Date.now() - expiry} ms after the lease ended (waited ${Date.now() - tWait} ms)`);
    assert.deepEqual(
      expired.json.claims.map((c: { event: { sequence: number }; delivery_count: number }) => [c.event.sequence, c.delivery_count]),
      [[1, 2]],
    );
    await sleep(Math.max(0, Date.parse(lb.lease_expires_at) - Date.now() + 20));
    assert.deepEqual((await claim(a)).json.claims, [], 'event 2 died instead of being claimed');
    assert.deepEqual(
      (await dead(a)).map((e) => [e.sequence, e.deadReason]),
      [[2, 'lease expired on delivery 1 of max_deliveries 1']],
    );
    assert.equal((await settle(a, la.lease_id, 'ack')).json.error.code, 'lease_lost');
    assert.equal((await settle(a, lb.lease_id, 'ack')).json.error.code, 'lease_lost');

    const b = await createAddress(base);
    await deliver(base, b, { data: 'c' });
    await deliver(base, b, { data: 'd' });
    const [lc, ld] = (await api(base, 'POST', `/api/v1/addresses/${b.id}/claims`, { token: b.token, json: { max: 2, lease_seconds: 5 } })).json.claims;
    await sleep(Date.parse(lc.lease_expires_at) - Date.now() + 50);
    // Event c: expired, not yet superseded: its lease may still ack (the work was done).
    const late = await api(base, 'POST', `/api/v1/addresses/${b.id}/claims/${lc.lease_id}/ack`, { token: b.token });
    assert.equal(late.status, 200, late.text);
    // Event d: taken again by the next claim, which makes the old lease lost.
    const re = await api(base, 'POST', `/api/v1/addresses/${b.id}/claims`, { token: b.token, json: { max: 5 } });
    assert.deepEqual(
      re.json.claims.map((c: { event: { sequence: number }; delivery_count: number }) => [c.event.sequence, c.delivery_count]),
      [[2, 2]],
    );
    const lost = await api(base, 'POST', `/api/v1/addresses/${b.id}/claims/${ld.lease_id}/ack`, { token: b.token });
    assert.equal(lost.status, 409);
  });

  it('refuses bad input with 400 naming the field, unknown leases with 404, other tokens with 401', async () => {
    const a = await createAddress(base);
    const other = await createAddress(base);
    for (const [body, field] of [
      [{ max: 0 }, 'max'],
      [{ max: 101 }, 'max'],
      [{ lease_seconds: 4 }, 'lease_seconds'],
      [{ lease_seconds: 3601 }, 'lease_seconds'],
      [{ wait: 26 }, 'wait'],
      [{ max_deliveries: 0 }, 'max_deliveries'],
      [{ nope: 1 }, 'nope'],
      [{ type: '*' }, 'type'],
      [{ match: ['no-equals'] }, 'match'],
      [{ match: { 'x.y': 1 } }, 'match'],
    ] as const) {
      const r = await claim(a, body);
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      assert.match(r.json.error.message, new RegExp(field));
    }
    const bad = await api(base, 'POST', `/api/v1/addresses/${a.id}/claims`, {
      token: a.token,
      body: '{"max":',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(bad.status, 400);
    assert.equal((await settle(a, 'lease_nope', 'ack')).status, 404);
    assert.equal((await settle(a, `lease_${'a'.repeat(26)}_${'b'.repeat(20)}`, 'ack')).status, 404);
    await deliver(base, a, {});
    const l = (await claim(a)).json.claims[0];
    assert.equal(
      (await api(base, 'POST', `/api/v1/addresses/${other.id}/claims/${l.lease_id}/ack`, { token: other.token })).status,
      404,
      'a lease of another address is unknown here',
    );
    assert.equal((await api(base, 'POST', `/api/v1/addresses/${a.id}/claims/${l.lease_id}/ack`, { token: other.token })).status, 401);
    assert.equal((await settle(a, l.lease_id, 'nack', { reason: 'x'.repeat(501) })).status, 400);
    assert.equal((await settle(a, l.lease_id, 'nack', { delay_seconds: 86_401 })).status, 400);
    assert.equal((await settle(a, l.lease_id, 'extend', { lease_seconds: 1 })).status, 400);
    // The largest claim the limits allow, with a liveness probe beside it.
    const big = await createAddress(base);
    await Promise.all(range(1, 150).map((i) => deliver(base, big, { data: { i, pad: 'x'.repeat(1000) } })));
    const [many, probe] = await Promise.all([
      claim(big, { max: 100, match: Object.fromEntries(range(1, 20).map((i) => [`data.k${i}`, i])) }),
      api(base, 'GET', '/healthz'),
    ]);
    assert.equal(probe.status, 200);
    assert.deepEqual(many.json.claims, [], 'nothing matches twenty absent paths');
    assert.equal((await claim(big, { max: 100 })).json.claims.length, 100);
  });
});
