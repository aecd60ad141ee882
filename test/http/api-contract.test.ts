// The HTTP contract's edges that the happy path does not reach: every error in the documented
// shape with its code, validation that names the field, limits, order of auth checks, ack.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { api, createAddress, deliver, listEvents, type Res, range, startTestService } from '../helpers.js';
import { type InjectedService, startInjectedService } from '../inject.js';

function assertError(r: Res, status: number, code: string): string {
  assert.equal(r.status, status, r.text);
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(r.json?.error?.code, code, r.text);
  assert.equal(typeof r.json.error.message, 'string');
  assert.deepEqual(Object.keys(r.json), ['error']);
  return r.json.error.message as string;
}

describe('HTTP contract', () => {
  let svc: InjectedService;
  let base: string;
  before(async () => {
    svc = await startInjectedService({ MAX_PAYLOAD_BYTES: '65536' });
    base = svc.baseUrl;
  });
  after(() => svc.stop());

  it('create: defaults, field names, URLs, and the token never again', async () => {
    const a = await createAddress(base, { name: 'n', task_id: 't' });
    const { address, credentials, endpoints } = a.body;
    assert.deepEqual(Object.keys(address).sort(), ['createdAt', 'email', 'expiresAt', 'id', 'name', 'slug', 'taskId']);
    assert.match(address.id, /^addr_[0-9a-z]{26}$/);
    assert.match(address.slug, /^[a-z][0-9a-z]{11}$/);
    // EMAIL_DOMAIN defaults to BASE_URL's host.
    assert.equal(address.email, `${address.slug}@${new URL(base).hostname}`);
    assert.match(credentials.read_token, /^aa_read_[A-Za-z0-9_-]{43}$/);
    assert.equal(endpoints.inbox_url, `${base}/api/v1/inbox/${address.id}/${a.secret}`);
    assert.match(a.secret, /^aa_ingress_[A-Za-z0-9_-]{43}$/);
    assert.equal(Date.parse(address.expiresAt) - Date.parse(address.createdAt), 7 * 24 * 3600 * 1000);
    const got = await api(base, 'GET', `/api/v1/addresses/${a.id}`, { token: a.token });
    assert.deepEqual(got.json, { address });
    assert.ok(!got.text.includes(a.token) && !got.text.includes(a.secret));
  });

  it('create: JSON null, arrays and scalars are 400 invalid_request; no body and {} are 201', async () => {
    for (const body of ['null', '[]', '"x"', '7']) {
      assertError(await api(base, 'POST', '/api/v1/addresses', { body, headers: { 'content-type': 'application/json' } }), 400, 'invalid_request');
    }
    assert.equal((await api(base, 'POST', '/api/v1/addresses')).status, 201);
    assert.equal((await api(base, 'POST', '/api/v1/addresses', { body: '', headers: { 'content-type': 'application/json' } })).status, 201);
  });

  it('validation messages name the field, and nothing is coerced', async () => {
    const cases: [unknown, string][] = [
      [{ name: 5 }, 'name'],
      [{ task_id: 'x'.repeat(201) }, 'task_id'],
      [{ expires_in_seconds: '3600' }, 'expires_in_seconds'],
      [{ expires_in_seconds: 59 }, 'expires_in_seconds'],
      [{ bogus: 1 }, 'bogus'],
    ];
    for (const [json, field] of cases) {
      const msg = assertError(await api(base, 'POST', '/api/v1/addresses', { json }), 400, 'invalid_request');
      assert.ok(msg.includes(field), `${msg} names ${field}`);
    }
    const a = await createAddress(base);
    for (const [q, v] of [
      ['after', '0x10'],
      ['after', '1e2'],
      ['limit', ' 5'],
      ['wait', '2.0'],
      ['limit', '101'],
      ['after', '-1'],
    ]) {
      const msg = assertError(await listEvents(base, a, { [q!]: v! }), 400, 'invalid_request');
      assert.ok(msg.includes(q!), `${msg} names ${q}`);
    }
    const twice = await api(base, 'GET', `/api/v1/addresses/${a.id}/events?limit=1&limit=2`, { token: a.token });
    assertError(twice, 400, 'invalid_request');
  });

  it('delivery: defaults, exact storage of data and metadata, and invalid bodies store nothing', async () => {
    const a = await createAddress(base);
    const d = await deliver(base, a, {});
    assert.equal(d.status, 202);
    assert.equal(d.json.duplicate, false);
    assert.deepEqual(
      { type: d.json.event.type, source: d.json.event.source, data: d.json.event.data, sequence: d.json.event.sequence },
      { type: 'message.received', source: 'https', data: null, sequence: 1 },
    );
    assert.ok(!('metadata' in d.json.event) && !('dedupe_key' in d.json.event) && !('acknowledged_at' in d.json.event));
    const weird = {
      data: { s: 'nul\u0000 \ud83d\ude00 "q" \\', n: [1.5, -0, 1e300, null, true], e: {} },
      metadata: { k: 'v\u0000', '\u0000': '' },
      type: '',
      source: 'x',
    };
    const w = await deliver(base, a, weird);
    assert.equal(w.status, 202);
    const page = await listEvents(base, a);
    assert.deepEqual(page.json.events[1].data, JSON.parse(JSON.stringify(weird.data)));
    assert.deepEqual(page.json.events[1].metadata, weird.metadata);
    for (const bad of [
      { metadata: { k: 1 } },
      { metadata: 'x' },
      { type: 5 },
      { dedupe_key: '' },
      { dedupe_key: 'x'.repeat(256) },
      { extra: 1 },
      { type: 'a\u0000b' },
      { source: '\u0000' },
      { dedupe_key: 'k\u0000' },
    ]) {
      assertError(await deliver(base, a, bad), 400, 'invalid_request');
    }
    assertError(await deliver(base, a, {}, 'k'.repeat(256)), 400, 'invalid_request');
    assert.equal((await listEvents(base, a)).json.events.length, 2, 'refused deliveries stored nothing');
  });

  it('header key and body dedupe_key: equal is one key, different is 409 and consumes neither', async () => {
    const a = await createAddress(base);
    const both = await deliver(base, a, { dedupe_key: 'same', data: 1 }, 'same');
    assert.equal(both.status, 202);
    assert.equal(both.json.event.dedupe_key, 'same');
    assert.equal((await deliver(base, a, { dedupe_key: 'same' })).status, 200, 'the body key alone finds it');
    assertError(await deliver(base, a, { dedupe_key: 'body-k' }, 'header-k'), 409, 'idempotency_key_mismatch');
    assert.equal((await deliver(base, a, {}, 'header-k')).status, 202, 'the header key was not consumed');
    assert.equal((await deliver(base, a, { dedupe_key: 'body-k' })).status, 202, 'the body key was not consumed');
    assert.deepEqual(
      (await listEvents(base, a)).json.events.map((e: { sequence: number }) => e.sequence),
      [1, 2, 3],
    );
  });

  it('deep JSON: 64 levels of data are stored, 65 are refused, 10,000 levels cost nothing', async () => {
    const a = await createAddress(base);
    const nest = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    const ok = await api(base, 'POST', a.inboxUrl, { body: `{"data":${nest(64)}}`, headers: { 'content-type': 'application/json' } });
    assert.equal(ok.status, 202, ok.text);
    const msg = assertError(
      await api(base, 'POST', a.inboxUrl, { body: `{"data":${nest(65)}}`, headers: { 'content-type': 'application/json' } }),
      400,
      'invalid_request',
    );
    assert.match(msg, /64/);
    assertError(
      await api(base, 'POST', a.inboxUrl, { body: `{"metadata":{"a":${nest(65)}}}`, headers: { 'content-type': 'application/json' } }),
      400,
      'invalid_request',
    );
    const huge = await api(base, 'POST', a.inboxUrl, {
      body: `{"data":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`,
      headers: { 'content-type': 'application/json' },
    });
    assertError(huge, 400, 'invalid_request');
    // Brackets inside strings are not nesting.
    const inString = await deliver(base, a, { data: '['.repeat(1000) });
    assert.equal(inString.status, 202);
    assert.equal((await api(base, 'GET', '/healthz')).status, 200);
  });

  it('413 over MAX_PAYLOAD_BYTES, 415 for other media types, invalid_json for broken JSON', async () => {
    const a = await createAddress(base);
    assertError(
      await api(base, 'POST', a.inboxUrl, { body: `{"data":"${'x'.repeat(70_000)}"}`, headers: { 'content-type': 'application/json' } }),
      413,
      'payload_too_large',
    );
    assertError(await api(base, 'POST', a.inboxUrl, { body: '{}', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
    assertError(await api(base, 'POST', a.inboxUrl, { body: '{}', headers: { 'content-type': 'application/vnd.api+json' } }), 415, 'unsupported_media_type');
    assertError(await api(base, 'POST', a.inboxUrl, { body: '{"a":', headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');
    assert.equal((await api(base, 'POST', a.inboxUrl, { body: '{}', headers: { 'content-type': 'application/json; charset=UTF-8' } })).status, 202);
  });

  it('unknown routes are 404 and known paths with another method are 405 with Allow', async () => {
    assertError(await api(base, 'GET', '/nope'), 404, 'not_found');
    const r = await api(base, 'PUT', '/api/v1/addresses');
    assertError(r, 405, 'method_not_allowed');
    assert.equal(r.headers.get('allow'), 'POST');
    const a = await createAddress(base);
    const r2 = await api(base, 'PATCH', `/api/v1/addresses/${a.id}`, { token: a.token });
    assertError(r2, 405, 'method_not_allowed');
    assert.match(r2.headers.get('allow') ?? '', /GET.*DELETE|DELETE.*GET/);
    assertError(await api(base, 'GET', a.inboxUrl), 405, 'method_not_allowed');
  });

  it('auth: order of checks, other tokens, and the inbox secret that cannot read', async () => {
    const a = await createAddress(base);
    const b = await createAddress(base);
    const ev = (await deliver(base, a, {})).json.event;
    const paths: [string, string][] = [
      ['GET', `/api/v1/addresses/${a.id}`],
      ['DELETE', `/api/v1/addresses/${a.id}`],
      ['GET', `/api/v1/addresses/${a.id}/events`],
      ['POST', `/api/v1/addresses/${a.id}/events/${ev.id}/ack`],
    ];
    for (const [m, p] of paths) {
      assertError(await api(base, m, p), 401, 'unauthorized');
      assertError(await api(base, m, p, { token: b.token }), 401, 'unauthorized');
      assertError(await api(base, m, p, { headers: { authorization: `Bearer ${a.secret}` } }), 401, 'unauthorized');
      assertError(await api(base, m, p, { headers: { authorization: `Basic ${a.token}` } }), 401, 'unauthorized');
    }
    const unknown = `/api/v1/addresses/addr_${'0'.repeat(26)}`;
    assertError(await api(base, 'GET', unknown), 401, 'unauthorized');
    assertError(await api(base, 'GET', unknown, { token: a.token }), 404, 'not_found');
    assertError(await api(base, 'GET', '/api/v1/addresses/not-an-id', { token: a.token }), 404, 'not_found');
    // Scheme is case-insensitive (RFC 9110).
    assert.equal((await api(base, 'GET', `/api/v1/addresses/${a.id}`, { headers: { authorization: `bearer ${a.token}` } })).status, 200);
    // Nothing above changed anything.
    const page = await listEvents(base, a);
    assert.equal(page.json.events.length, 1);
    assert.equal(page.json.events[0].acknowledged_at, undefined);
    // Wrong secret and unknown address are indistinguishable.
    const wrong = await api(base, 'POST', `${base}/api/v1/inbox/${a.id}/${b.secret}`, { json: {} });
    const none = await api(base, 'POST', `${base}/api/v1/inbox/addr_${'1'.repeat(26)}/${a.secret}`, { json: {} });
    assert.equal(assertError(wrong, 404, 'not_found'), assertError(none, 404, 'not_found'));
  });

  it('ack: 200 with acknowledged_at, idempotent, 404 for unknown or foreign events', async () => {
    const a = await createAddress(base);
    const b = await createAddress(base);
    const ev = (await deliver(base, a, { data: 1 })).json.event;
    const evB = (await deliver(base, b, {})).json.event;
    const first = await api(base, 'POST', `/api/v1/addresses/${a.id}/events/${ev.id}/ack`, { token: a.token });
    assert.equal(first.status, 200);
    const { acknowledged_at, ...rest } = first.json.event;
    assert.deepEqual(rest, ev);
    assert.ok(Date.parse(acknowledged_at) >= Date.parse(ev.created_at));
    const second = await api(base, 'POST', `/api/v1/addresses/${a.id}/events/${ev.id}/ack`, { token: a.token });
    assert.deepEqual(second.json, first.json);
    assertError(await api(base, 'POST', `/api/v1/addresses/${a.id}/events/${evB.id}/ack`, { token: a.token }), 404, 'not_found');
    assertError(await api(base, 'POST', `/api/v1/addresses/${a.id}/events/evt_${'0'.repeat(26)}/ack`, { token: a.token }), 404, 'not_found');
    // A duplicate delivery after the ack still returns the original event, now acknowledged.
    const k = await deliver(base, a, {}, 'key-after-ack');
    await api(base, 'POST', `/api/v1/addresses/${a.id}/events/${k.json.event.id}/ack`, { token: a.token });
    const again = await deliver(base, a, { data: 'different' }, 'key-after-ack');
    assert.equal(again.status, 200);
    assert.equal(again.json.event.id, k.json.event.id);
    assert.equal(again.json.event.data, null);
    assert.ok(again.json.event.acknowledged_at);
  });

  it('has_more and next_cursor are exact at every page boundary', async () => {
    const a = await createAddress(base);
    for (const i of range(1, 5)) await deliver(base, a, { data: i });
    const walk = [];
    for (let after = 0; after <= 6; after++) {
      const p = (await listEvents(base, a, { after, limit: 2 })).json;
      walk.push([after, p.events.map((e: { sequence: number }) => e.sequence), p.next_cursor, p.has_more]);
    }
    assert.deepEqual(walk, [
      [0, [1, 2], 2, true],
      [1, [2, 3], 3, true],
      [2, [3, 4], 4, true],
      [3, [4, 5], 5, false],
      [4, [5], 5, false],
      [5, [], 5, false],
      [6, [], 6, false],
    ]);
  });
});

describe('limits and expiry', () => {
  it('queue_full when every stored event is unacknowledged; the oldest acknowledged is pruned first', async () => {
    const svc = await startInjectedService({ MAX_EVENTS_PER_ADDRESS: '3' });
    try {
      const a = await createAddress(svc.baseUrl);
      const evs = [];
      for (const i of range(1, 3)) evs.push((await deliver(svc.baseUrl, a, { data: i })).json.event);
      const full = await deliver(svc.baseUrl, a, { data: 4 });
      assertError(full, 429, 'queue_full');
      assert.match(full.headers.get('retry-after') ?? '', /^\d+$/);
      await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/events/${evs[1].id}/ack`, { token: a.token });
      const next = await deliver(svc.baseUrl, a, { data: 4 });
      assert.equal(next.status, 202);
      assert.equal(next.json.event.sequence, 4, 'sequences never restart');
      const seqs = (await listEvents(svc.baseUrl, a)).json.events.map((e: { sequence: number }) => e.sequence);
      assert.deepEqual(seqs, [1, 3, 4], 'the acknowledged event went, the unacknowledged older one stayed');
    } finally {
      await svc.stop();
    }
  });

  it('the provisioning rate limit answers 429 with Retry-After; refused attempts do not count', async () => {
    const svc = await startInjectedService({ CREATE_RATE_LIMIT: '3', CREATE_RATE_WINDOW_SECONDS: '3600' });
    try {
      // Invalid requests are refused before they count.
      for (let i = 0; i < 5; i++) assert.equal((await api(svc.baseUrl, 'POST', '/api/v1/addresses', { json: { bad: 1 } })).status, 400);
      const res = await Promise.all(range(1, 10).map(() => api(svc.baseUrl, 'POST', '/api/v1/addresses')));
      assert.equal(res.filter((r) => r.status === 201).length, 3);
      const limited = res.filter((r) => r.status === 429);
      assert.equal(limited.length, 7);
      for (const r of limited) {
        assertError(r, 429, 'rate_limited');
        const ra = Number(r.headers.get('retry-after'));
        assert.ok(Number.isInteger(ra) && ra >= 1 && ra <= 3600, `Retry-After ${ra}`);
      }
    } finally {
      await svc.stop();
    }
  });

  // The sweeper runs only in a started service.
  it('after expiresAt deliveries get 410 while reads work; after the grace period the sweeper deletes it', async () => {
    // A grace of 4 s, not 1: on a busy machine the delivery meant for the grace period came after it ended.
    const svc = await startTestService({ DEFAULT_TTL_SECONDS: '1', EXPIRED_GRACE_SECONDS: '4', SWEEP_INTERVAL_SECONDS: '1' });
    try {
      const a = await createAddress(svc.baseUrl);
      const ev = (await deliver(svc.baseUrl, a, {})).json.event;
      const waiting = listEvents(svc.baseUrl, a, { after: 1, wait: 25 });
      await new Promise((r) => setTimeout(r, 1100));
      assertError(await deliver(svc.baseUrl, a, {}), 410, 'address_expired');
      assert.equal((await listEvents(svc.baseUrl, a)).json.events.length, 1, 'reading works during the grace period');
      assert.equal((await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/events/${ev.id}/ack`, { token: a.token })).status, 200);
      const ended = await waiting;
      assertError(ended, 404, 'not_found');
      assert.ok(ended.ms < 12_500, 'the sweep ended the waiting read, not its 25 s wait');
      assertError(await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}`, { token: a.token }), 404, 'not_found');
      assertError(await deliver(svc.baseUrl, a, {}), 404, 'not_found');
    } finally {
      await svc.stop();
    }
  });
});
