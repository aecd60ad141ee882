// The sender policy's routes and the capture URL under it, black box through the app (no socket):
// validation that names the field, the bearer routes' order of checks, the policy going with its
// address, a capture without a verified signature quarantined under require_signature (and a signed
// one not), quarantined events skipped by default reads and claims and listed by state=quarantined,
// release, and parallel captures under a policy keeping sequences gapless.
import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { OpenedStore } from '../../src/storage/open-store.js';
import { type Addr, api, createAddress, listEvents } from '../helpers.js';
import { type InjectedService, startInjectedService } from '../inject.js';

const SECRET = 'gh-secret-for-tests';
const sign = (body: string, secret = SECRET) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

describe('sender policy routes and the capture URL under a policy', () => {
  let svc: InjectedService;
  before(async () => {
    svc = await startInjectedService();
  });
  after(() => svc.stop());

  const policyPath = (a: Addr) => `/api/v1/addresses/${a.id}/sender-policy`;
  const putPolicy = (a: Addr, json: unknown, token = a.token) => api(svc.baseUrl, 'PUT', policyPath(a), { json, token });
  const getPolicy = (a: Addr) => api(svc.baseUrl, 'GET', policyPath(a), { token: a.token });
  const hookUrl = (a: Addr) => a.body.endpoints.hook_url as string;
  function capture(a: Addr, signed: 'good' | 'bad' | 'none', n = 0) {
    const body = JSON.stringify({ action: 'opened', n, nonce: randomUUID() });
    const headers: Record<string, string> = { 'content-type': 'application/json', 'x-github-event': 'pull_request', 'x-github-delivery': randomUUID() };
    if (signed !== 'none') headers['x-hub-signature-256'] = sign(body, signed === 'good' ? SECRET : 'not-the-secret');
    return api(svc.baseUrl, 'POST', `${hookUrl(a)}/github`, { body, headers });
  }
  async function withSecret(): Promise<Addr> {
    const a = await createAddress(svc.baseUrl);
    const r = await api(svc.baseUrl, 'PUT', `/api/v1/addresses/${a.id}/signing-secrets`, { json: { github: SECRET }, token: a.token });
    assert.equal(r.status, 200, r.text);
    return a;
  }

  it('PUT stores the normal form, GET shows it, DELETE removes it; none set reads as null', async () => {
    const a = await createAddress(svc.baseUrl);
    assert.deepEqual((await getPolicy(a)).json, { sender_policy: null, updated_at: null });
    const put = await putPolicy(a, { email: { allow: ['Example.COM', ' alice@example.org '] }, capture: { require_signature: true } });
    assert.equal(put.status, 200, put.text);
    assert.deepEqual(put.json.sender_policy, {
      email: { require: 'dmarc', allow: ['example.com', 'alice@example.org'] },
      capture: { require_signature: true },
    });
    assert.match(put.json.updated_at, /^\d{4}-\d\d-\d\dT/);
    assert.deepEqual((await getPolicy(a)).json, put.json);
    assert.equal((await putPolicy(a, {})).json.sender_policy !== null, true, '{} is a policy that judges nothing');
    const del = await api(svc.baseUrl, 'DELETE', policyPath(a), { token: a.token });
    assert.equal(del.status, 204);
    assert.equal((await api(svc.baseUrl, 'DELETE', policyPath(a), { token: a.token })).status, 204, 'idempotent');
    assert.deepEqual((await getPolicy(a)).json, { sender_policy: null, updated_at: null });
  });

  it('bad input is 400 naming the field and the fix', async () => {
    const a = await createAddress(svc.baseUrl);
    const cases: [unknown, RegExp][] = [
      [{ mail: {} }, /Unknown property 'mail'.*email, capture/],
      [{ email: { allow: [], deny: [] } }, /Unknown property 'deny'.*allow, require/],
      [{ capture: { require_signature: true, scheme: 'github' } }, /Unknown property 'scheme'.*require_signature/],
      [{ email: { allow: Array.from({ length: 101 }, (_, i) => `d${i}.example.com`) } }, /'email\.allow'.*100/],
      [{ email: { allow: ['example.com', 'not a domain'] } }, /'email\.allow\.1'.*domain \(example\.com\) or an address/],
      [{ email: { allow: ['bob@'] } }, /'email\.allow\.0'.*domain/],
      [{ email: { allow: ['Bob <bob@example.com>'] } }, /'email\.allow\.0'/],
      [{ email: { allow: ['localhost'] } }, /'email\.allow\.0'/],
      [{ email: { allow: ['-x.example.com'] } }, /'email\.allow\.0'/],
      [{ email: { allow: ['a@example.com', 'A@example.com'] } }, /'email\.allow\.1'.*listed twice/],
      [{ email: { require: 'spf' } }, /'email\.require'.*dmarc, dkim, none/],
      [{ email: { allow: 'example.com' } }, /'email\.allow'/],
      [{ capture: { require_signature: 'yes' } }, /'capture\.require_signature'/],
      [[], /body/i],
    ];
    for (const [json, message] of cases) {
      const r = await putPolicy(a, json);
      assert.equal(r.status, 400, `${JSON.stringify(json).slice(0, 80)}: ${r.text}`);
      assert.equal(r.json.error.code, 'invalid_request');
      assert.match(r.json.error.message, message, JSON.stringify(json).slice(0, 80));
    }
    const broken = await api(svc.baseUrl, 'PUT', policyPath(a), { body: '{"email":', headers: { 'content-type': 'application/json' }, token: a.token });
    assert.equal(broken.status, 400);
    assert.equal(broken.json.error.code, 'invalid_json');
    assert.deepEqual((await getPolicy(a)).json.sender_policy, null, 'nothing was stored by a refused PUT');
  });

  it('the largest policy is taken whole (100 entries of the longest form), and a repeated key keeps the last', async () => {
    const a = await createAddress(svc.baseUrl);
    const local = 'l'.repeat(64);
    const domain = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(53)}.example`; // 64 + 1 + 189 = 254 characters
    const allow = Array.from({ length: 100 }, (_, i) => `${local.slice(0, 62)}${String(i).padStart(2, '0')}@${domain}`);
    assert.equal(allow[0]!.length, 254);
    const r = await putPolicy(a, { email: { allow, require: 'none' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.sender_policy.email.allow.length, 100);
    const repeated = await api(svc.baseUrl, 'PUT', policyPath(a), {
      body: '{"capture":{"require_signature":false,"require_signature":true}}',
      headers: { 'content-type': 'application/json' },
      token: a.token,
    });
    assert.equal(repeated.status, 200, repeated.text);
    assert.deepEqual(repeated.json.sender_policy, { capture: { require_signature: true } });
    const deep = await putPolicy(a, { email: { allow: [[[[['example.com']]]]] } });
    assert.equal(deep.status, 400);
  });

  it('order of checks: 401 without a bearer, 404 unknown address, 401 wrong token, then validation', async () => {
    const a = await createAddress(svc.baseUrl);
    const b = await createAddress(svc.baseUrl);
    const bad = { nonsense: true };
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const json = method === 'PUT' ? bad : undefined;
      const none = await api(svc.baseUrl, method, policyPath(a), { ...(json ? { json } : {}) });
      assert.equal(none.status, 401, `${method} without a bearer`);
      const malformed = await api(svc.baseUrl, method, policyPath(a), { ...(json ? { json } : {}), headers: { authorization: 'Basic abc' } });
      assert.equal(malformed.status, 401, `${method} with a malformed credential`);
      const unknown = await api(svc.baseUrl, method, '/api/v1/addresses/addr_00000000000000000000000000/sender-policy', {
        ...(json ? { json } : {}),
        token: a.token,
      });
      assert.equal(unknown.status, 404, `${method} on an unknown address`);
      const wrong = await api(svc.baseUrl, method, policyPath(a), { ...(json ? { json } : {}), token: b.token });
      assert.equal(wrong.status, 401, `${method} with another address's token`);
    }
    assert.equal((await putPolicy(a, bad)).status, 400, 'only then validation');
  });

  it('the policy is deleted with the address', async () => {
    const a = await createAddress(svc.baseUrl);
    assert.equal((await putPolicy(a, { capture: { require_signature: true } })).status, 200);
    const policies = (svc.store as OpenedStore).senderPolicies;
    assert.notEqual(await policies.getSenderPolicy(a.id), null);
    assert.equal((await api(svc.baseUrl, 'DELETE', `/api/v1/addresses/${a.id}`, { token: a.token })).status, 204);
    assert.equal(await policies.getSenderPolicy(a.id), null);
  });

  it('require_signature: an unsigned or badly signed capture is stored quarantined (still 202), a signed one is not', async () => {
    const a = await withSecret();
    assert.equal((await putPolicy(a, { capture: { require_signature: true } })).status, 200);
    const unsigned = await capture(a, 'none', 1);
    const bad = await capture(a, 'bad', 2);
    const good = await capture(a, 'good', 3);
    for (const r of [unsigned, bad, good]) assert.equal(r.status, 202, r.text);

    const all = await listEvents(svc.baseUrl, a, { state: 'all' });
    assert.deepEqual(
      all.json.events.map((e: any) => [e.sequence, e.quarantined_at !== undefined, e.trust.verified]),
      [
        [1, true, false],
        [2, true, false],
        [3, false, true],
      ],
    );
    assert.match(all.json.events[0].trust.reason, /capture\.require_signature.*no signature/);
    assert.match(all.json.events[1].trust.reason, /capture\.require_signature.*did not verify/);
    assert.equal(all.json.events[0].trust.ingress, 'capture');

    const plain = await listEvents(svc.baseUrl, a);
    assert.deepEqual(
      plain.json.events.map((e: any) => e.sequence),
      [3],
      'default reads skip the quarantined ones',
    );
    assert.equal(plain.json.next_cursor, 3);
    const fromStart = await listEvents(svc.baseUrl, a, { limit: 2 });
    assert.deepEqual(fromStart.json.events, [], 'a page of held events only is empty');
    assert.equal(fromStart.json.next_cursor, 2, 'and its cursor moved past them: no stall');
    const filtered = await listEvents(svc.baseUrl, a, { type: 'github.*' });
    assert.deepEqual(
      filtered.json.events.map((e: any) => e.sequence),
      [3],
      'a filter without state skips them too',
    );
    const listed = await listEvents(svc.baseUrl, a, { state: 'quarantined' });
    assert.deepEqual(
      listed.json.events.map((e: any) => e.sequence),
      [1, 2],
    );

    const claim = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/claims`, { json: { max: 10 }, token: a.token });
    assert.deepEqual(
      claim.json.claims.map((c: any) => c.event.sequence),
      [3],
      'claims skip them',
    );
    const consumer = await listEvents(svc.baseUrl, a, { consumer: 'worker' });
    assert.deepEqual(
      consumer.json.events.map((e: any) => e.sequence),
      [3],
      'a named consumer skips them',
    );

    // Release one: a normal event again, read by a reader from before it; release twice keeps the time.
    const id1 = all.json.events[0].id;
    const rel = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/events/${id1}/release`, { token: a.token });
    assert.equal(rel.status, 200, rel.text);
    assert.match(rel.json.event.released_at, /^\d{4}-/);
    const rel2 = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/events/${id1}/release`, { token: a.token });
    assert.equal(rel2.json.event.released_at, rel.json.event.released_at);
    assert.deepEqual(
      (await listEvents(svc.baseUrl, a)).json.events.map((e: any) => e.sequence),
      [1, 3],
    );
    assert.deepEqual(
      (await listEvents(svc.baseUrl, a, { state: 'quarantined' })).json.events.map((e: any) => e.sequence),
      [2],
    );
    const claimAgain = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/claims`, { json: { max: 10 }, token: a.token });
    assert.deepEqual(
      claimAgain.json.claims.map((c: any) => c.event.sequence),
      [1],
      'a released event is claimable',
    );
    // Acking the other dismisses it: no longer listed as quarantined, still never read by default.
    const ack = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/events/${all.json.events[1].id}/ack`, { token: a.token });
    assert.equal(ack.status, 200);
    assert.deepEqual((await listEvents(svc.baseUrl, a, { state: 'quarantined' })).json.events, []);
    assert.deepEqual(
      (await listEvents(svc.baseUrl, a)).json.events.map((e: any) => e.sequence),
      [1, 3],
    );

    const notHeld = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/events/${all.json.events[2].id}/release`, { token: a.token });
    assert.equal(notHeld.status, 409);
    assert.equal(notHeld.json.error.code, 'not_quarantined');
    const unknown = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/events/evt_nope/release`, { token: a.token });
    assert.equal(unknown.status, 404);
    const noBearer = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/events/${id1}/release`);
    assert.equal(noBearer.status, 401);
  });

  it('without a policy, or with one for mail only, captures are not quarantined', async () => {
    const a = await withSecret();
    assert.equal((await capture(a, 'none')).status, 202);
    assert.equal((await putPolicy(a, { email: { allow: ['example.com'] } })).status, 200);
    assert.equal((await capture(a, 'bad')).status, 202);
    const page = await listEvents(svc.baseUrl, a, { state: 'all' });
    assert.deepEqual(
      page.json.events.map((e: any) => e.quarantined_at),
      [undefined, undefined],
    );
    // An inbox delivery is never judged: its trust says who may write it.
    assert.equal((await putPolicy(a, { capture: { require_signature: true } })).status, 200);
    assert.equal((await api(svc.baseUrl, 'POST', a.inboxUrl, { json: { type: 'x' } })).status, 202);
    assert.equal((await listEvents(svc.baseUrl, a, { after: 2 })).json.events.length, 1);
  });

  it('parallel captures under a policy keep sequences gapless, each with its own verdict', async () => {
    const a = await withSecret();
    assert.equal((await putPolicy(a, { capture: { require_signature: true } })).status, 200);
    const n = 60;
    const answers = await Promise.all(Array.from({ length: n }, (_, i) => capture(a, i % 3 === 0 ? 'good' : i % 3 === 1 ? 'none' : 'bad', i)));
    for (const r of answers) assert.equal(r.status, 202, r.text);
    const all = await listEvents(svc.baseUrl, a, { state: 'all', limit: 100 });
    assert.deepEqual(
      all.json.events.map((e: any) => e.sequence),
      Array.from({ length: n }, (_, i) => i + 1),
    );
    for (const e of all.json.events) {
      const good = e.data.signature.verified === true;
      assert.equal(e.quarantined_at === undefined, good, `event ${e.sequence}: quarantined exactly when its signature did not verify`);
    }
    const plain = await listEvents(svc.baseUrl, a, { limit: 100 });
    assert.equal(plain.json.events.length, n / 3);
    assert.equal(plain.json.next_cursor, n);
    assert.equal((await listEvents(svc.baseUrl, a, { state: 'quarantined', limit: 100 })).json.events.length, (2 * n) / 3);
  });
});
