// POST …/rotate over real sockets, on the store STORE selects (npm test runs both): a rotated
// credential is refused from the answer on while the address, its queue and its signing secrets stay;
// bad input is a 400 naming the field; parallel rotations and reads leave no moment after the answer
// when the old and the new credential both work; a liveness probe runs beside the attack.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { type Addr, api, createAddress, deliver, listEvents, STORE, startTestService, type TestService } from '../helpers.js';
import { LIVENESS_MS, startLivenessProbe } from '../liveness-probe.js';

const rotate = (svc: TestService, a: { id: string }, token: string, json: unknown) =>
  api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/rotate`, { token, json });

describe(`credential rotation (${STORE})`, () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(async () => {
    await svc.stop();
  });

  it('a new inbox secret: the old inbox and capture URLs 404, the new ones deliver into the same queue; the read token and signing secrets stay', async () => {
    const a = await createAddress(svc.baseUrl);
    const hook = a.body.endpoints.hook_url as string;
    assert.equal((await deliver(svc.baseUrl, a, { data: { n: 1 } })).status, 202);
    const secret = 'github-secret-1';
    const set = await api(svc.baseUrl, 'PUT', `/api/v1/addresses/${a.id}/signing-secrets`, { token: a.token, json: { github: secret } });
    assert.equal(set.status, 200, set.text);

    const r = await rotate(svc, a, a.token, { inbox_secret: true });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.address.id, a.id);
    assert.equal(r.json.address.email, a.email, 'the email address is unchanged');
    assert.equal(r.json.credentials.read_token, undefined, 'the read token was not rotated, so none is shown');
    assert.equal(r.json.endpoints.events_url, a.eventsUrl);
    const inbox = r.json.endpoints.inbox_url as string;
    const newHook = r.json.endpoints.hook_url as string;
    assert.notEqual(inbox, a.inboxUrl);
    assert.match(inbox, new RegExp(`/api/v1/inbox/${a.id}/aa_ingress_[A-Za-z0-9_-]{43}$`));
    assert.equal(newHook, inbox.replace('/inbox/', '/hooks/'));

    assert.equal((await deliver(svc.baseUrl, a, { data: { n: 2 } })).status, 404, 'the old inbox URL is refused');
    assert.equal((await fetch(hook, { method: 'POST', body: 'x' })).status, 404, 'the old capture URL is refused');
    const fresh = await api(svc.baseUrl, 'POST', inbox, { json: { data: { n: 3 } } });
    assert.equal(fresh.status, 202, fresh.text);
    assert.equal(fresh.json.event.sequence, 2, 'the same queue goes on');

    // The signing secret opens with the new inbox secret: a signed capture verifies.
    const body = '{"action":"opened"}';
    const signed = await fetch(newHook, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'pull_request',
        'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
      },
      body,
    });
    assert.equal(signed.status, 202, await signed.text());
    const page = await listEvents(svc.baseUrl, a);
    assert.equal(page.status, 200, 'the read token still reads');
    assert.deepEqual(
      page.json.events.map((e: { sequence: number }) => e.sequence),
      [1, 2, 3],
    );
    assert.deepEqual([page.json.events[0].data, page.json.events[1].data], [{ n: 1 }, { n: 3 }]);
    assert.equal(page.json.events[2].trust.verified, true, 'the signing secret survived the rotation');
  });

  it('a new read token: the old one is 401 everywhere at once, the new one reads, and the secrets can still be replaced with it', async () => {
    const a = await createAddress(svc.baseUrl);
    assert.equal((await deliver(svc.baseUrl, a, { data: 'kept' })).status, 202);
    const r = await rotate(svc, a, a.token, { read_token: true });
    assert.equal(r.status, 200, r.text);
    const token = r.json.credentials.read_token as string;
    assert.match(token, /^aa_read_[A-Za-z0-9_-]{43}$/);
    assert.equal(r.json.endpoints.inbox_url, undefined, 'the inbox secret was not rotated, so no URL is shown');
    for (const path of [`/api/v1/addresses/${a.id}`, `/api/v1/addresses/${a.id}/events`]) {
      assert.equal((await api(svc.baseUrl, 'GET', path, { token: a.token })).status, 401, `old token on ${path}`);
      assert.equal((await api(svc.baseUrl, 'GET', path, { token })).status, 200, `new token on ${path}`);
    }
    assert.equal((await rotate(svc, a, a.token, { read_token: true })).status, 401, 'the old token cannot rotate again');
    const page = await listEvents(svc.baseUrl, { ...a, token });
    assert.deepEqual(
      page.json.events.map((e: { data: unknown }) => e.data),
      ['kept'],
    );
    assert.equal((await deliver(svc.baseUrl, a, { data: 'still' })).status, 202, 'the inbox URL is unchanged');
    const put = await api(svc.baseUrl, 'PUT', `/api/v1/addresses/${a.id}/signing-secrets`, { token, json: { github: 'x' } });
    assert.equal(put.status, 200, `the data key opens with the new token: ${put.text}`);
  });

  it('both at once', async () => {
    const a = await createAddress(svc.baseUrl);
    const r = await rotate(svc, a, a.token, { read_token: true, inbox_secret: true });
    assert.equal(r.status, 200, r.text);
    assert.ok(r.json.credentials.read_token && r.json.endpoints.inbox_url && r.json.endpoints.hook_url);
    assert.equal((await deliver(svc.baseUrl, a)).status, 404);
    assert.equal((await listEvents(svc.baseUrl, a)).status, 401);
    assert.equal((await api(svc.baseUrl, 'POST', r.json.endpoints.inbox_url, { json: {} })).status, 202);
    assert.equal((await listEvents(svc.baseUrl, { ...a, token: r.json.credentials.read_token })).json.events.length, 1);
  });

  it('bad input is 400 naming the field; the credential is checked first; nothing is rotated by a refused request', async () => {
    const a = await createAddress(svc.baseUrl);
    const probe = startLivenessProbe(svc.baseUrl);
    for (const json of [{}, { inbox_secret: false }, { read_token: false, inbox_secret: false }]) {
      const r = await rotate(svc, a, a.token, json);
      assert.equal(r.status, 400, JSON.stringify(json));
      assert.equal(r.json.error.code, 'invalid_request');
      assert.match(r.json.error.message, /inbox_secret/);
      assert.match(r.json.error.message, /read_token/);
    }
    const extra = await rotate(svc, a, a.token, { read_token: true, everything: true });
    assert.equal(extra.status, 400);
    assert.match(extra.json.error.message, /everything/);
    const typed = await rotate(svc, a, a.token, { read_token: 'yes' });
    assert.equal(typed.status, 400);
    assert.match(typed.json.error.message, /read_token/);
    const notJson = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/rotate`, {
      token: a.token,
      body: '{',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(notJson.status, 400);
    assert.equal((await rotate(svc, a, 'aa_read_wrong', { read_token: true })).status, 401);
    assert.equal((await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/rotate`, { json: { read_token: true } })).status, 401);
    const other = await createAddress(svc.baseUrl);
    assert.equal((await rotate(svc, a, other.token, { read_token: true })).status, 401, "another address's token");
    assert.equal((await rotate(svc, { id: 'addr_00000000000000000000000000' }, a.token, { read_token: true })).status, 404);
    assert.equal((await listEvents(svc.baseUrl, a)).status, 200, 'nothing was rotated');
    assert.equal((await deliver(svc.baseUrl, a)).status, 202);
    const { maxMs, failures } = await probe.stop();
    assert.deepEqual(failures, []);
    assert.ok(maxMs < LIVENESS_MS, `healthz answered within ${LIVENESS_MS} ms (slowest ${maxMs} ms)`);
  });

  it('parallel rotations of one token: exactly one wins, the others are 401, and only the winner reads', async () => {
    const a = await createAddress(svc.baseUrl);
    const answers = await Promise.all(Array.from({ length: 24 }, () => rotate(svc, a, a.token, { read_token: true })));
    const won = answers.filter((r) => r.status === 200);
    assert.equal(won.length, 1, answers.map((r) => r.status).join(','));
    assert.ok(answers.every((r) => r.status === 200 || r.status === 401));
    assert.equal((await listEvents(svc.baseUrl, { ...a, token: won[0]!.json.credentials.read_token })).status, 200);
    assert.equal((await listEvents(svc.baseUrl, a)).status, 401);
  });

  it('parallel inbox rotations all answer, and exactly one of their secrets delivers afterwards', async () => {
    const a = await createAddress(svc.baseUrl);
    const answers = await Promise.all(Array.from({ length: 16 }, () => rotate(svc, a, a.token, { inbox_secret: true })));
    assert.deepEqual(
      answers.map((r) => r.status),
      answers.map(() => 200),
    );
    const statuses = await Promise.all(answers.map((r) => api(svc.baseUrl, 'POST', r.json.endpoints.inbox_url, { json: {} }).then((d) => d.status)));
    assert.equal(statuses.filter((s) => s === 202).length, 1, statuses.join(','));
    assert.equal(statuses.filter((s) => s === 404).length, answers.length - 1);
    assert.equal((await deliver(svc.baseUrl, a)).status, 404);
  });

  it('reads and deliveries racing a rotation: every request sent after the answer with the old credential is refused, with the new one accepted', async () => {
    const a: Addr = await createAddress(svc.baseUrl);
    const probe = startLivenessProbe(svc.baseUrl);
    let answeredAt = Number.POSITIVE_INFINITY;
    let stop = false;
    const late: string[] = [];
    const racer = async (send: () => Promise<{ status: number }>, refused: number, what: string) => {
      while (!stop) {
        const sentAt = performance.now();
        const { status } = await send();
        if (sentAt > answeredAt && status !== refused) late.push(`${what} sent after the answer got ${status}`);
      }
    };
    const racers = [
      ...Array.from({ length: 6 }, () => racer(() => listEvents(svc.baseUrl, a), 401, 'old-token read')),
      ...Array.from({ length: 6 }, () => racer(() => deliver(svc.baseUrl, a), 404, 'old-secret delivery')),
    ];
    let answersAfter: { status: number }[] = [];
    try {
      await new Promise((r) => setTimeout(r, 100));
      const r = await rotate(svc, a, a.token, { read_token: true, inbox_secret: true });
      answeredAt = performance.now();
      assert.equal(r.status, 200, r.text);
      const fresh = { ...a, token: r.json.credentials.read_token as string, inboxUrl: r.json.endpoints.inbox_url as string };
      answersAfter = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? listEvents(svc.baseUrl, fresh) : deliver(svc.baseUrl, fresh))));
      await new Promise((r) => setTimeout(r, 200));
    } finally {
      stop = true;
      await Promise.all(racers);
    }
    assert.deepEqual(late, []);
    assert.deepEqual(
      answersAfter.map((x) => x.status),
      answersAfter.map((_, i) => (i % 2 ? 200 : 202)),
    );
    const { maxMs, failures } = await probe.stop();
    assert.deepEqual(failures, []);
    assert.ok(maxMs < LIVENESS_MS, `healthz answered within ${LIVENESS_MS} ms (slowest ${maxMs} ms)`);
  });
});
