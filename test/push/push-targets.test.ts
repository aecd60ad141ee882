// Webhook subscriptions attacked at their way in, on a service without PUSH_ALLOW_PRIVATE: targets on
// loopback, private, link-local (the metadata service), CGNAT and IPv6 loopback are refused with 400
// naming url, by literal and by a name resolving to them (localhost, and names of a test DNS), and
// never contacted; a name that resolves to a public address at create and to loopback later (DNS
// rebinding) is refused inside the connection, again never contacted. Then the subscription
// routes' bad input, order of checks, and the cap per address under parallel creates. A liveness
// probe runs beside it all.
import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { api, createAddress, deliver, STORE, startTestService, type TestService } from '../helpers.js';
import { LIVENESS_MS, type LivenessProbe, startLivenessProbe } from '../liveness-probe.js';
import { until } from './receiver.js';

describe(`push subscription targets and input (${STORE})`, () => {
  let svc: TestService;
  let probe: LivenessProbe;
  let trap: net.Server;
  let trapPort = 0;
  let contacts = 0;
  let rebindCalls = 0;
  // The test's DNS: a few names resolve to inside addresses; rebind.test turns private after its first answer.
  const names: Record<string, string> = { 'private.test': '10.0.0.1', 'metadata.test': '169.254.169.254', 'loop6.test': '::1', 'cgnat.test': '100.64.0.9' };
  const resolve = async (host: string): Promise<LookupAddress[]> => {
    if (host === 'rebind.test') return rebindCalls++ === 0 ? [{ address: '93.184.215.14', family: 4 }] : [{ address: '127.0.0.1', family: 4 }];
    if (host === 'localhost') return [{ address: '127.0.0.1', family: 4 }];
    if (host === 'example.com') return [{ address: '93.184.215.14', family: 4 }];
    const a = names[host];
    if (a === undefined) throw Object.assign(new Error(`ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return [{ address: a, family: net.isIP(a) }];
  };
  before(async () => {
    // Anything that connects here is a target that should have been refused.
    trap = net.createServer((s) => {
      contacts++;
      s.destroy();
    });
    await new Promise<void>((r) => trap.listen(0, '127.0.0.1', r));
    trapPort = (trap.address() as net.AddressInfo).port;
    svc = await startTestService({ PUSH_RETRY_SCHEDULE_MS: '0,50,50', MAX_SUBSCRIPTIONS_PER_ADDRESS: '3' }, undefined, { pushResolve: resolve });
    probe = startLivenessProbe(svc.baseUrl);
  });
  after(async () => {
    const p = await probe.stop();
    assert.deepEqual(p.failures, []);
    assert.ok(p.maxMs < LIVENESS_MS, `/healthz within ${LIVENESS_MS} ms (slowest ${p.maxMs.toFixed(0)} ms)`);
    await svc.stop();
    await new Promise((r) => trap.close(r));
  });

  it('inside addresses are refused by literal and by name, with 400 naming url, and never contacted', async () => {
    const a = await createAddress(svc.baseUrl);
    const targets = [
      `https://127.0.0.1:${trapPort}/x`,
      'https://10.0.0.1/x',
      'https://169.254.169.254/latest/meta-data/',
      `https://[::1]:${trapPort}/x`,
      'https://100.64.0.1/x',
      `https://[::ffff:127.0.0.1]:${trapPort}/x`,
      'https://0.0.0.0/x',
      `https://localhost:${trapPort}/x`,
      'https://private.test/x',
      'https://metadata.test/x',
      'https://loop6.test/x',
      'https://cgnat.test/x',
      'https://nowhere.test/x',
      `http://127.0.0.1:${trapPort}/x`,
      'http://example.com/x',
      'ftp://example.com/x',
      'https://user:pw@example.com/x',
      'not a url',
    ];
    for (const url of targets) {
      const r = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/subscriptions`, { json: { url }, token: a.token });
      assert.equal(r.status, 400, `${url}: ${r.text}`);
      assert.equal(r.json.error.code, 'invalid_request');
      assert.match(r.json.error.message, /body field 'url'/, url);
    }
    const listed = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/subscriptions`, { token: a.token });
    assert.deepEqual(listed.json.subscriptions, []);
    assert.equal(contacts, 0, 'no refused target was contacted');
  });

  it('a name that turns private after the create (DNS rebinding) is refused inside the connection, never contacted', async () => {
    const a = await createAddress(svc.baseUrl);
    const created = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/subscriptions`, {
      json: { url: `https://rebind.test:${trapPort}/x` },
      token: a.token,
    });
    assert.equal(created.status, 201, created.text);
    await deliver(svc.baseUrl, a, { data: { n: 1 } });
    const path = `/api/v1/addresses/${a.id}/subscriptions/${created.json.id}`;
    await until(async () => (await api(svc.baseUrl, 'GET', path, { token: a.token })).json.state === 'paused', 10_000, 'paused after refused attempts');
    const s = (await api(svc.baseUrl, 'GET', path, { token: a.token })).json;
    assert.match(s.last_error, /127\.0\.0\.1 .*not a public address/);
    assert.equal(s.last_status, null);
    assert.equal(s.cursor, 0, 'the position did not move');
    assert.equal(contacts, 0, 'the rebound name was never contacted');
  });

  it('bad input is 400 naming the field; the credential is checked first; unknown ids are 404', async () => {
    const a = await createAddress(svc.baseUrl);
    const other = await createAddress(svc.baseUrl);
    const path = `/api/v1/addresses/${a.id}/subscriptions`;
    const url = 'https://example.com/hooks';
    const cases: [unknown, RegExp][] = [
      [{}, /url/],
      [{ url, secret: 'nope' }, /'secret'.*whsec_/],
      [{ url, secret: `whsec_${Buffer.alloc(16).toString('base64')}` }, /'secret'.*24-64/],
      [{ url, secret: `whsec_${Buffer.alloc(65).toString('base64')}` }, /'secret'/],
      [{ url, type: '' }, /type/],
      [{ url, match: ['no-equals-sign'] }, /match/],
      [{ url, ttl_seconds: 5 }, /ttl_seconds/],
      [{ url, extra: 1 }, /extra/],
      [{ url: 42 }, /url/],
    ];
    for (const [json, re] of cases) {
      const r = await api(svc.baseUrl, 'POST', path, { json, token: a.token });
      assert.equal(r.status, 400, `${JSON.stringify(json)}: ${r.text}`);
      assert.equal(r.json.error.code, 'invalid_request');
      assert.match(r.json.error.message, re, JSON.stringify(json));
    }
    assert.equal((await api(svc.baseUrl, 'POST', path, { json: {} })).status, 401, 'no token: 401 before the body is judged');
    assert.equal((await api(svc.baseUrl, 'POST', path, { json: { url }, token: other.token })).status, 401, "another address's token");
    for (const [method, sub] of [
      ['GET', '/sub_nope'],
      ['DELETE', '/sub_nope'],
      ['POST', '/sub_nope/resume'],
    ] as const) {
      const r = await api(svc.baseUrl, method, `${path}${sub}`, { token: a.token });
      assert.equal(r.status, 404, `${method} ${sub}`);
      assert.equal(r.json.error.code, 'not_found');
    }
  });

  it('parallel creates on one address: exactly MAX_SUBSCRIPTIONS_PER_ADDRESS stored, the rest 409; delete frees a place', async () => {
    const a = await createAddress(svc.baseUrl);
    const path = `/api/v1/addresses/${a.id}/subscriptions`;
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => api(svc.baseUrl, 'POST', path, { json: { url: `https://example.com/hooks/${i}` }, token: a.token })),
    );
    const created = results.filter((r) => r.status === 201);
    const refused = results.filter((r) => r.status === 409);
    assert.equal(created.length, 3, results.map((r) => r.status).join(','));
    assert.equal(refused.length, 9);
    assert.equal(refused[0]!.json.error.code, 'too_many_subscriptions');
    assert.match(refused[0]!.json.error.message, /MAX_SUBSCRIPTIONS_PER_ADDRESS/);
    const listed = await api(svc.baseUrl, 'GET', path, { token: a.token });
    assert.equal(listed.json.subscriptions.length, 3);
    const consumers = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/consumers`, { token: a.token });
    assert.equal(consumers.json.consumers.length, 3, 'a refused create leaves no consumer behind');
    assert.equal((await api(svc.baseUrl, 'DELETE', `${path}/${created[0]!.json.id}`, { token: a.token })).status, 204);
    assert.equal((await api(svc.baseUrl, 'POST', path, { json: { url: 'https://example.com/again' }, token: a.token })).status, 201);
  });
});
