// An event's trust (design.md, "Trust: what an agent may believe") through the routes, on the store
// STORE selects: what the inbox URL can forge, what the capture URL proves, an approval's answer,
// the filters on it, and provider dedupe keys that a forgery can no longer take first.
import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { INBOX_TRUST_REASON } from '../../src/domain/trust.js';
import { type Addr, api, createAddress, deliver, listEvents, range, STORE } from '../helpers.js';
import { type InjectedService, startInjectedService } from '../inject.js';

const SECRET = "It's a Secret to Everybody";
const hookUrl = (a: Addr): string => a.body.endpoints.hook_url;

function githubDelivery(delivery: string, secret: string | null, action = 'closed') {
  const body = JSON.stringify({ action, number: 42, repository: { full_name: 'octocat/Hello-World' }, sender: { login: 'octocat' } });
  const signature = secret === null ? `sha256=${'0'.repeat(64)}` : `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'GitHub-Hookshot/a1b2c3d',
      'x-github-event': 'pull_request',
      'x-github-delivery': delivery,
      'x-hub-signature-256': signature,
    },
  };
}

describe(`trust (${STORE})`, () => {
  let svc: InjectedService;
  let base: string;
  before(async () => {
    svc = await startInjectedService();
    base = svc.baseUrl;
  });
  after(() => svc.stop());

  const events = async (a: Addr, query: Record<string, string | number> = {}) => {
    const r = await listEvents(base, a, { limit: 100, ...query });
    assert.equal(r.status, 200, r.text);
    return r.json.events as any[];
  };
  const setGithubSecret = async (a: Addr) => {
    const r = await api(base, 'PUT', `/api/v1/addresses/${a.id}/signing-secrets`, { token: a.token, json: { github: SECRET } });
    assert.equal(r.status, 200, r.text);
  };

  it('a forged provider event on the inbox URL is ingress inbox, verified null, and no trust filter for proven events returns it', async () => {
    const a = await createAddress(base);
    const forged = await deliver(base, a, {
      type: 'stripe.checkout.session.completed',
      source: 'stripe',
      data: { signature: { scheme: 'stripe', verified: true }, authentication: { summary: 'pass' } },
    });
    assert.equal(forged.status, 202, forged.text);
    const [e] = await events(a);
    assert.deepEqual(e.trust, { ingress: 'inbox', verified: null, method: null, identity: null, reason: INBOX_TRUST_REASON });
    assert.deepEqual(Object.keys(e).slice(0, 6), ['id', 'address_id', 'sequence', 'type', 'source', 'trust'], 'trust sits beside type and source');
    // What the sender wrote in data still matches a data filter: which is why recipes never use one.
    assert.equal((await events(a, { match: 'data.signature.verified=true' })).length, 1);
    assert.deepEqual(await events(a, { match: 'trust.verified=true' }), []);
    const both = await api(base, 'GET', `/api/v1/addresses/${a.id}/events?match=trust.ingress%3Dcapture&match=trust.verified%3Dtrue`, { token: a.token });
    assert.equal(both.status, 200, both.text);
    assert.deepEqual(both.json.events, []);
    assert.equal((await events(a, { match: 'trust.ingress=inbox' })).length, 1);
    assert.equal((await events(a, { match: 'trust.verified=null' })).length, 1);
  });

  it('an inbox body cannot set trust: 400 naming it, nothing stored; a huge or deeply nested trust member is refused as fast', async () => {
    const a = await createAddress(base);
    const r = await deliver(base, a, { type: 't', trust: { ingress: 'capture', verified: true } });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.code, 'invalid_request');
    assert.match(r.json.error.message, /'trust'/);
    assert.match(r.json.error.message, /written only by the service/);
    const deep = `${'{"verified":'.repeat(5_000)}true${'}'.repeat(5_000)}`;
    const big = await api(base, 'POST', a.inboxUrl, {
      body: `{"trust":${deep},"data":"${'x'.repeat(200_000)}"}`,
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(big.status, 400, big.text.slice(0, 200));
    assert.deepEqual(await events(a), []);
    // Liveness beside it: the service still answers.
    assert.equal((await api(base, 'GET', '/healthz')).status, 200);
  });

  it('a forged GitHub delivery first, then the genuine one with the same X-GitHub-Delivery: both stored, the genuine one 202 new and verified', async () => {
    const a = await createAddress(base);
    await setGithubSecret(a);
    const id = randomUUID();
    // The forger tries all three ways at the key: a bad signature, no signature, and the inbox's own key.
    const forged = githubDelivery(id, null, 'opened');
    const f1 = await api(base, 'POST', hookUrl(a), { body: forged.body, headers: forged.headers });
    assert.equal(f1.status, 202, f1.text);
    const { 'x-hub-signature-256': _dropped, ...unsigned } = forged.headers;
    const f2 = await api(base, 'POST', hookUrl(a), { body: forged.body, headers: unsigned });
    assert.equal(f2.status, 200, 'an unverified repeat dedupes among the unverified');
    // The inbox's provider-shaped key lands among the unverified ones: a duplicate of the forged capture.
    const f3 = await deliver(base, a, { type: 'github.pull_request', source: 'github', dedupe_key: `github:${id}` });
    assert.equal(f3.status, 200, f3.text);
    const f4 = await api(base, 'POST', hookUrl(a), { body: forged.body, headers: { ...unsigned, 'idempotency-key': `github:${id}` } });
    assert.equal(f4.status, 200, 'an Idempotency-Key shaped like the provider key is kept apart too');

    const genuine = githubDelivery(id, SECRET);
    const g = await api(base, 'POST', hookUrl(a), { body: genuine.body, headers: genuine.headers });
    assert.equal(g.status, 202, g.text);
    assert.equal(g.json.duplicate, false);
    const retry = await api(base, 'POST', hookUrl(a), { body: genuine.body, headers: genuine.headers });
    assert.equal(retry.status, 200, "the provider's own retry is still a duplicate");

    const all = await events(a);
    assert.deepEqual(
      all.map((e) => [e.dedupe_key, e.trust.ingress, e.trust.verified]),
      [
        [`unverified:github:${id}`, 'capture', false],
        [`github:${id}`, 'capture', true],
      ],
    );
    const proven = await events(a, { match: 'trust.verified=true' });
    assert.equal(proven.length, 1);
    assert.equal(proven[0].id, g.json.event.id);
    assert.deepEqual(proven[0].trust, { ingress: 'capture', verified: true, method: 'github', identity: 'github', reason: null });
    assert.equal(all[0].trust.method, 'github');
    assert.match(all[0].trust.reason, /does not match/);
  });

  it('without a secret for the scheme, a capture is verified null and keeps its provider key', async () => {
    const a = await createAddress(base);
    const id = randomUUID();
    const d = githubDelivery(id, SECRET);
    assert.equal((await api(base, 'POST', hookUrl(a), { body: d.body, headers: d.headers })).status, 202);
    const [e] = await events(a);
    assert.equal(e.dedupe_key, `github:${id}`);
    assert.equal(e.trust.ingress, 'capture');
    assert.equal(e.trust.verified, null);
    assert.equal(e.trust.method, 'github');
    assert.match(e.trust.reason, /no github signing secret is set/);
  });

  it('forgeries and the genuine delivery racing with one delivery id: the genuine one is stored once, verified, under the provider key', async () => {
    const a = await createAddress(base);
    await setGithubSecret(a);
    const id = randomUUID();
    const forged = githubDelivery(id, null);
    const genuine = githubDelivery(id, SECRET);
    const answers = await Promise.all(
      range(1, 40).map((i) =>
        i % 2 === 0
          ? api(base, 'POST', hookUrl(a), { body: genuine.body, headers: genuine.headers })
          : i % 4 === 1
            ? api(base, 'POST', hookUrl(a), { body: forged.body, headers: forged.headers })
            : deliver(base, a, { type: 'github.pull_request', dedupe_key: `github:${id}` }),
      ),
    );
    for (const r of answers) assert.ok(r.status === 202 || r.status === 200, r.text);
    const all = await events(a);
    const byKey = new Map<string, any[]>();
    for (const e of all) byKey.set(e.dedupe_key, [...(byKey.get(e.dedupe_key) ?? []), e]);
    assert.equal(byKey.get(`github:${id}`)?.length, 1);
    assert.equal(byKey.get(`github:${id}`)?.[0].trust.verified, true);
    assert.equal(all.length, 2, 'one genuine; the forged captures and inbox deliveries share the unverified key');
    assert.equal(byKey.get(`unverified:github:${id}`)?.length, 1);
    const genuineIds = new Set(answers.filter((_, i) => (i + 1) % 2 === 0).map((r) => r.json.event.id));
    assert.deepEqual([...genuineIds], [byKey.get(`github:${id}`)?.[0].id]);
  });

  it("an approval's answer is ingress approval, verified by its secret link; a cancel is the service's own", async () => {
    const a = await createAddress(base);
    const create = (question: string) => api(base, 'POST', `/api/v1/addresses/${a.id}/approvals`, { token: a.token, json: { question } });
    const first = (await create('Ship it?')).json.approval;
    const answered = await api(base, 'POST', first.url, { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'option=approve' });
    assert.ok(answered.status < 400, answered.text.slice(0, 300));
    const second = (await create('Hold it?')).json.approval;
    const cancelled = await api(base, 'DELETE', `/api/v1/addresses/${a.id}/approvals/${second.id}`, { token: a.token });
    assert.equal(cancelled.status, 200, cancelled.text);
    const all = await events(a);
    assert.deepEqual(
      all.map((e) => [e.type, e.trust]),
      [
        ['approval.decided', { ingress: 'approval', verified: true, method: 'approval_link', identity: null, reason: null }],
        ['approval.cancelled', { ingress: 'service', verified: true, method: null, identity: null, reason: null }],
      ],
    );
    assert.deepEqual(
      (await events(a, { match: 'trust.ingress=approval' })).map((e) => e.type),
      ['approval.decided'],
    );
  });
});
