// Approvals over real sockets on the configured store (design.md, "Approvals"): link scanners answer
// nothing, the form and JSON record, max_responses holds under concurrent answers, expiry appends
// approval.expired once (also with two instances on one PostgreSQL), cancel, bad input, a SIGKILL
// right after the 200 loses nothing, and the secret never reaches the log.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  type Addr,
  api,
  createAddress,
  createTestStorage,
  listEvents,
  onlyPostgres,
  range,
  STORE,
  sleep,
  spawnService,
  startTestService,
  type TestService,
} from '../helpers.js';
import { OpenApiValidator } from '../openapi-validator.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

async function createApproval(baseUrl: string, a: Addr, json: unknown = { question: 'Approve the $4,197 purchase?' }) {
  const r = await api(baseUrl, 'POST', `/api/v1/addresses/${a.id}/approvals`, { token: a.token, json });
  assert.equal(r.status, 201, r.text);
  return r.json.approval as { id: string; url: string; status: string; options: { id: string; label: string }[]; expires_at: string };
}

async function allEvents(baseUrl: string, a: Addr) {
  const r = await listEvents(baseUrl, a, { limit: 100 });
  assert.equal(r.status, 200, r.text);
  return r.json.events as { type: string; source: string; dedupe_key?: string; data: Record<string, unknown>; sequence: number }[];
}

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

describe(`approvals (${STORE})`, () => {
  let svc: TestService;
  let a: Addr;
  before(async () => {
    svc = await startTestService();
    a = await createAddress(svc.baseUrl);
  });
  after(async () => {
    await svc?.stop();
  });

  it('creates an approval: 201 with its url, defaults approve/deny, pending', async () => {
    const ap = await createApproval(svc.baseUrl, a);
    assert.match(ap.id, /^apr_[0-9a-z]{26}$/);
    assert.match(ap.url, new RegExp(`^${svc.baseUrl}/approve/${ap.id}/aa_approve_[A-Za-z0-9_-]{43}$`));
    assert.deepEqual(
      ap.options.map((o) => o.id),
      ['approve', 'deny'],
    );
    assert.equal(ap.status, 'pending');
    const got = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/approvals/${ap.id}`, { token: a.token });
    assert.equal(got.status, 200);
    assert.equal(got.json.approval.url, undefined, 'the url (and so the secret) is shown once');
    assert.deepEqual(got.json.approval.answers, []);
  });

  it('refuses bad definitions with 400 naming the field', async () => {
    const cases: [unknown, RegExp][] = [
      [{ question: 'x'.repeat(501) }, /question/],
      [{ question: 'q', details: 'd'.repeat(10_001) }, /details/],
      [{ question: 'q', options: [] }, /options/],
      [{ question: 'q', options: [{ id: 'a', label: 'A' }] }, /options/],
      [{ question: 'q', options: range(1, 6).map((i) => ({ id: `o${i}`, label: `O${i}` })) }, /options/],
      [
        {
          question: 'q',
          options: [
            { id: 'a', label: 'A' },
            { id: 'a', label: 'B' },
          ],
        },
        /options\/1\/id/,
      ],
      [
        {
          question: 'q',
          options: [
            { id: 'a', label: 'L'.repeat(101) },
            { id: 'b', label: 'B' },
          ],
        },
        /label/,
      ],
      [{ question: 'q', fields: [{ name: 'f', label: 'F', type: 'color' }] }, /type/],
      [{ question: 'q', fields: [{ name: 'f', label: 'F', type: 'select' }] }, /fields\/0\/choices/],
      [{ question: 'q', expires_in_seconds: 30 }, /expires_in_seconds/],
      [{ question: 'q', expires_in_seconds: 8 * 24 * 3600 }, /expires_in_seconds.*remaining lifetime/],
      [{ question: 'q', max_responses: 101 }, /max_responses/],
      [{ question: 'q', colour: 'red' }, /colour/],
    ];
    for (const [json, field] of cases) {
      const r = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/approvals`, { token: a.token, json });
      assert.equal(r.status, 400, `${JSON.stringify(json).slice(0, 80)}: ${r.text}`);
      assert.equal(r.json.error.code, 'invalid_request');
      assert.match(r.json.error.message, field, JSON.stringify(json).slice(0, 80));
    }
    const other = await createAddress(svc.baseUrl);
    assert.equal((await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/approvals`, { token: other.token, json: { question: 'q' } })).status, 401);
  });

  it('a plain GET, HEAD, a prefetch and link expanders see the page and answer nothing', async () => {
    const b = await createAddress(svc.baseUrl);
    const ap = await createApproval(svc.baseUrl, b);
    const asks: [string, Record<string, string>][] = [
      ['GET', {}],
      ['HEAD', {}],
      ['GET', { 'sec-purpose': 'prefetch' }],
      ['GET', { purpose: 'prefetch', 'sec-purpose': 'prefetch;prerender' }],
      ['GET', { 'user-agent': 'Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)' }],
      ['GET', { 'user-agent': 'Mozilla/5.0 (compatible; Microsoft Safe Links; +https://aka.ms/safelinks)' }],
      ['GET', { 'user-agent': 'facebookexternalhit/1.1' }],
    ];
    for (const [method, headers] of asks) {
      const r = await api(svc.baseUrl, method, ap.url, { headers });
      assert.equal(r.status, 200, `${method} ${JSON.stringify(headers)}`);
      assert.match(r.headers.get('content-type') ?? '', /^text\/html/);
      assert.match(
        r.headers.get('content-security-policy') ?? '',
        /default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+'.*form-action 'self'; frame-ancestors 'none'/,
      );
      assert.equal(r.headers.get('referrer-policy'), 'no-referrer');
      assert.equal(r.headers.get('cache-control'), 'no-store');
      if (method === 'GET') {
        assert.match(r.text, /<meta name="viewport" content="width=device-width, initial-scale=1">/);
        assert.match(r.text, /<button type="submit" name="option" value="approve">Approve<\/button>/);
        assert.doesNotMatch(r.text, /<script/i);
        assert.doesNotMatch(r.text, /aa_approve_/, 'the secret is not written into the page');
      }
    }
    assert.deepEqual(await allEvents(svc.baseUrl, b), [], 'nothing was appended');
    const got = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${b.id}/approvals/${ap.id}`, { token: b.token });
    assert.equal(got.json.approval.responses, 0);
    assert.equal(got.json.approval.status, 'pending');
  });

  it('a link with parameters a chat or mail tool appended (utm_*, fbclid, repeated) shows the page and records a POST', async () => {
    const b = await createAddress(svc.baseUrl);
    const ap = await createApproval(svc.baseUrl, b);
    const tagged = `${ap.url}?utm_source=slack&fbclid=x&utm_medium=chat&utm_medium=again&${'k'.repeat(200)}=${'v'.repeat(2000)}`;
    for (const method of ['GET', 'HEAD']) {
      const r = await api(svc.baseUrl, method, tagged);
      assert.equal(r.status, 200, `${method}: ${r.text}`);
      assert.match(r.headers.get('content-type') ?? '', /^text\/html/);
      if (method === 'GET') assert.match(r.text, /<button type="submit" name="option" value="approve">Approve<\/button>/);
    }
    assert.deepEqual(await allEvents(svc.baseUrl, b), [], 'showing the page answers nothing');
    // The form has no action: the browser posts to the URL it shows, parameters and all.
    const ok = await api(svc.baseUrl, 'POST', tagged, { headers: FORM, body: form({ option: 'approve' }) });
    assert.equal(ok.status, 200, ok.text);
    assert.match(ok.text, /Your answer was recorded: <strong>Approve<\/strong>/);
    const events = await allEvents(svc.baseUrl, b);
    assert.deepEqual(
      events.map((e) => [e.type, e.data.option]),
      [['approval.decided', 'approve']],
    );
    // Only the path is the credential: parameters cannot stand in for a wrong secret.
    const wrong = await api(svc.baseUrl, 'GET', `${ap.url.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'))}?utm_source=slack`);
    assert.equal(wrong.status, 404);
  });

  it('the form records an answer: approval.decided, a page naming it, then 409 and a closed page', async () => {
    const b = await createAddress(svc.baseUrl);
    const ap = await createApproval(svc.baseUrl, b, {
      question: 'Ship it?',
      options: [
        { id: 'yes', label: 'Ship' },
        { id: 'no', label: 'Hold' },
      ],
      fields: [
        { name: 'ticket', label: 'Ticket', type: 'text', required: true },
        { name: 'urgent', label: 'Urgent', type: 'boolean' },
        { name: 'amount', label: 'Amount', type: 'number' },
        { name: 'region', label: 'Region', type: 'select', choices: ['eu', 'us'] },
      ],
    });
    // A missing required field: the page again, the error named, nothing recorded.
    const missing = await api(svc.baseUrl, 'POST', ap.url, { headers: FORM, body: form({ option: 'no', 'field.amount': '3' }) });
    assert.equal(missing.status, 400);
    assert.match(missing.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(missing.text, /class="notice error" role="alert">fields\.ticket \(Ticket\): is required\./);
    assert.match(missing.text, /name="field.amount" value="3"/, 'what was typed is kept');
    const unknown = await api(svc.baseUrl, 'POST', ap.url, { headers: FORM, body: form({ option: 'maybe', 'field.ticket': 'T-1' }) });
    assert.equal(unknown.status, 400);
    assert.match(unknown.text, /option: &quot;maybe&quot; is not an option of this approval; choose one of yes, no\./);
    const repeated = await api(svc.baseUrl, 'POST', ap.url, { headers: FORM, body: 'option=yes&option=no&field.ticket=T' });
    assert.equal(repeated.status, 400);
    assert.match(repeated.text, /option: sent more than once/);
    assert.deepEqual(await allEvents(svc.baseUrl, b), []);

    const ok = await api(svc.baseUrl, 'POST', ap.url, {
      headers: { ...FORM, 'user-agent': 'test-browser/1' },
      body: form({ option: 'no', reason: 'not today', 'field.ticket': 'T-42', 'field.urgent': 'on', 'field.amount': '12.5', 'field.region': 'eu' }),
    });
    assert.equal(ok.status, 200, ok.text);
    assert.match(ok.text, /Your answer was recorded: <strong>Hold<\/strong>/);
    const [e, ...rest] = await allEvents(svc.baseUrl, b);
    assert.equal(rest.length, 0);
    assert.equal(e?.type, 'approval.decided');
    assert.equal(e?.source, 'approval');
    assert.equal(e?.dedupe_key, `approval:${ap.id}:1`);
    const { decided_at: decidedAt, ...data } = e!.data;
    assert.match(String(decidedAt), /^\d{4}-\d\d-\d\dT/);
    assert.deepEqual(data, {
      approval_id: ap.id,
      question: 'Ship it?',
      option: 'no',
      label: 'Hold',
      reason: 'not today',
      fields: { ticket: 'T-42', urgent: true, amount: 12.5, region: 'eu' },
      responder: { remote_ip: '127.0.0.1', user_agent: 'test-browser/1' },
    });

    const again = await api(svc.baseUrl, 'POST', ap.url, { headers: FORM, body: form({ option: 'yes', 'field.ticket': 'T' }) });
    assert.equal(again.status, 409);
    assert.match(again.text, /has all the answers it asked for/);
    const json = await api(svc.baseUrl, 'POST', ap.url, { json: { option: 'yes', fields: { ticket: 'T' } } });
    assert.equal(json.status, 409);
    assert.equal(json.json.error.code, 'approval_closed');
    const page = await api(svc.baseUrl, 'GET', ap.url);
    assert.match(page.text, /has all the answers it asked for/);
    assert.doesNotMatch(page.text, /<form/);
    const got = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${b.id}/approvals/${ap.id}`, { token: b.token });
    assert.equal(got.json.approval.status, 'decided');
    assert.equal(got.json.approval.answers.length, 1);
    assert.equal(got.json.approval.answers[0].option, 'no');
    assert.equal((await allEvents(svc.baseUrl, b)).length, 1);
  });

  it('JSON records an answer, and refuses a bad one with 400 recording nothing', async () => {
    const b = await createAddress(svc.baseUrl);
    const ap = await createApproval(svc.baseUrl, b, { question: 'Deploy?', fields: [{ name: 'note', label: 'Note', type: 'textarea', required: true }] });
    for (const [json, msg] of [
      [{ option: 'nope', fields: { note: 'x' } }, /option/],
      [{ option: 'approve' }, /fields\.note \(Note\): is required/],
      [{ option: 'approve', fields: { note: 'x', extra: 1 } }, /fields\.extra/],
      [{ option: 'approve', fields: { note: 5 } }, /fields\.note/],
      [{ option: 'approve', fields: { note: 'x' }, reason: 'r'.repeat(2001) }, /reason/],
      [[1, 2], /body/],
    ] as const) {
      const r = await api(svc.baseUrl, 'POST', ap.url, { json });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.error.code, 'invalid_request');
      assert.match(r.json.error.message, msg);
    }
    assert.deepEqual(await allEvents(svc.baseUrl, b), []);
    const ok = await api(svc.baseUrl, 'POST', ap.url, { json: { option: 'approve', fields: { note: 'go' } } });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.json.event.type, 'approval.decided');
    assert.equal(ok.json.approval.status, 'decided');
    const events = await allEvents(svc.baseUrl, b);
    assert.equal(events.length, 1);
    assert.equal(events[0]!.data.option, 'approve');
  });

  it('an unknown id and a wrong secret are one 404 (a page for browsers, JSON for programs)', async () => {
    const ap = await createApproval(svc.baseUrl, a);
    const wrong = `${ap.url.slice(0, -5)}AAAAA`;
    const page = await api(svc.baseUrl, 'GET', wrong);
    assert.equal(page.status, 404);
    assert.match(page.text, /No approval at this link/);
    const unknownId = await api(svc.baseUrl, 'GET', ap.url.replace(ap.id, 'apr_00000000000000000000000000'));
    assert.equal(unknownId.status, 404);
    assert.equal(unknownId.text, page.text);
    const json = await api(svc.baseUrl, 'POST', wrong, { json: { option: 'approve' } });
    assert.equal(json.status, 404);
    assert.equal(json.json.error.code, 'not_found');
  });

  it('max_responses: 20 concurrent answers record exactly max_responses, the rest get 409', async () => {
    const b = await createAddress(svc.baseUrl);
    const ap = await createApproval(svc.baseUrl, b, { question: 'Vote', max_responses: 3 });
    const answers = await Promise.all(
      range(1, 20).map((i) =>
        i % 2 === 0
          ? api(svc.baseUrl, 'POST', ap.url, { json: { option: i % 4 === 0 ? 'approve' : 'deny', reason: `r${i}` } })
          : api(svc.baseUrl, 'POST', ap.url, { headers: FORM, body: form({ option: 'approve', reason: `r${i}` }) }),
      ),
    );
    const statuses = answers.map((r) => r.status).sort();
    assert.deepEqual(statuses, [...Array(3).fill(200), ...Array(17).fill(409)], statuses.join(','));
    const events = await allEvents(svc.baseUrl, b);
    assert.deepEqual(
      events.map((e) => e.dedupe_key).sort(),
      [1, 2, 3].map((n) => `approval:${ap.id}:${n}`),
    );
    const recorded = answers
      .filter((r) => r.status === 200)
      .map((r) => (r.json ? r.json.event.data.reason : /r\d+/.exec(r.text)?.[0]))
      .sort();
    const got = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${b.id}/approvals/${ap.id}`, { token: b.token });
    assert.equal(got.json.approval.responses, 3);
    assert.equal(got.json.approval.status, 'decided');
    assert.deepEqual(
      got.json.approval.answers.map((x: { n: number }) => x.n),
      [1, 2, 3],
    );
    assert.equal(recorded.length, 3);
    assert.equal((await api(svc.baseUrl, 'GET', '/healthz')).status, 200, 'the service is alive');
  });

  it('cancel appends approval.cancelled once; the page says so; a POST and a second DELETE get 409', async () => {
    const b = await createAddress(svc.baseUrl);
    const ap = await createApproval(svc.baseUrl, b);
    const del = await api(svc.baseUrl, 'DELETE', `/api/v1/addresses/${b.id}/approvals/${ap.id}`, { token: b.token });
    assert.equal(del.status, 200, del.text);
    assert.equal(del.json.approval.status, 'cancelled');
    const events = await allEvents(svc.baseUrl, b);
    assert.deepEqual(
      events.map((e) => [e.type, e.dedupe_key]),
      [['approval.cancelled', `approval:${ap.id}:cancelled`]],
    );
    assert.match((await api(svc.baseUrl, 'GET', ap.url)).text, /was cancelled/);
    assert.equal((await api(svc.baseUrl, 'POST', ap.url, { json: { option: 'approve' } })).status, 409);
    const second = await api(svc.baseUrl, 'DELETE', `/api/v1/addresses/${b.id}/approvals/${ap.id}`, { token: b.token });
    assert.equal(second.status, 409);
    assert.equal(second.json.error.code, 'approval_closed');
    assert.equal((await allEvents(svc.baseUrl, b)).length, 1);
    assert.equal((await api(svc.baseUrl, 'DELETE', `/api/v1/addresses/${b.id}/approvals/apr_00000000000000000000000000`, { token: b.token })).status, 404);
  });

  it('every answer of the approval routes and the page is what /openapi.json declares', async () => {
    const v = new OpenApiValidator((await api(svc.baseUrl, 'GET', '/openapi.json')).json);
    const b = await createAddress(svc.baseUrl);
    const base = `/api/v1/addresses/${b.id}/approvals`;
    const check = async (method: string, path: string, opts: Parameters<typeof api>[3] = {}) => {
      const r = await api(svc.baseUrl, method, path, opts);
      v.check(method, new URL(path, svc.baseUrl).pathname, r);
      return r;
    };
    const created = await check('POST', base, {
      token: b.token,
      json: { question: 'q', fields: [{ name: 'n', label: 'N', type: 'number', required: true }], max_responses: 2 },
    });
    assert.equal(created.status, 201);
    const url: string = created.json.approval.url;
    await check('POST', base, { token: b.token, json: { question: '' } });
    await check('POST', base, { json: { question: 'q' } });
    await check('GET', `${base}/${created.json.approval.id}`, { token: b.token });
    await check('GET', `${base}/apr_00000000000000000000000000`, { token: b.token });
    await check('GET', url);
    assert.equal((await api(svc.baseUrl, 'HEAD', url)).status, 200);
    await check('GET', `${url}x`);
    assert.equal((await check('POST', url, { json: { option: 'approve' } })).status, 400);
    assert.equal((await check('POST', url, { headers: FORM, body: 'option=approve' })).status, 400);
    assert.equal((await check('POST', url, { headers: FORM, body: 'option=approve&field.n=3' })).status, 200);
    assert.equal((await check('POST', url, { json: { option: 'deny', fields: { n: 4 } } })).status, 200);
    assert.equal((await check('POST', url, { json: { option: 'deny', fields: { n: 4 } } })).status, 409);
    assert.equal((await check('POST', url, { headers: FORM, body: 'option=deny&field.n=4' })).status, 409);
    assert.equal((await check('POST', `${url}x`, { json: { option: 'deny' } })).status, 404);
    assert.equal((await check('POST', url, { headers: { 'content-type': 'text/plain' }, body: 'x' })).status, 415);
    await check('DELETE', `${base}/${created.json.approval.id}`, { token: b.token });
    const other = await check('POST', base, { token: b.token, json: { question: 'q2' } });
    assert.equal((await check('DELETE', `${base}/${other.json.approval.id}`, { token: b.token })).status, 200);
  });

  it('the largest definition and answer the limits allow, and over-long bodies, with a liveness probe', async () => {
    const b = await createAddress(svc.baseUrl);
    const ap = await createApproval(svc.baseUrl, b, {
      question: '€'.repeat(500),
      details: 'd\n'.repeat(5000),
      options: range(1, 5).map((i) => ({ id: `o${i}`.padEnd(40, 'x'), label: 'L'.repeat(100) })),
      fields: range(1, 10).map((i) => ({ name: `f${i}`, label: 'F'.repeat(200), type: 'textarea', required: true })),
      max_responses: 100,
    });
    const fields = Object.fromEntries(range(1, 10).map((i) => [`f${i}`, '<'.repeat(10_000)]));
    const [big, probe] = await Promise.all([
      api(svc.baseUrl, 'POST', ap.url, { json: { option: ap.options[4]!.id, reason: '"'.repeat(2000), fields } }),
      api(svc.baseUrl, 'GET', '/healthz'),
    ]);
    assert.equal(big.status, 200, big.text.slice(0, 200));
    assert.equal(probe.status, 200);
    const tooBig = await api(svc.baseUrl, 'POST', ap.url, { headers: FORM, body: `option=o1&reason=${'x'.repeat(300_000)}` });
    assert.equal(tooBig.status, 413);
    const page = await api(svc.baseUrl, 'GET', ap.url);
    assert.equal(page.status, 200);
    assert.ok(page.text.length < 200_000, `page of ${page.text.length} characters`);
  });
});

describe(`approval expiry (${STORE})`, () => {
  it('appends approval.expired once at expiry, closes the page, and a POST after it gets 409', { timeout: 60_000 }, async () => {
    const svc = await startTestService({ MIN_APPROVAL_SECONDS: '1', SWEEP_INTERVAL_SECONDS: '1' });
    try {
      const a = await createAddress(svc.baseUrl);
      const ap = await createApproval(svc.baseUrl, a, { question: 'Quick?', expires_in_seconds: 1 });
      const answered = await createApproval(svc.baseUrl, a, { question: 'Answered', expires_in_seconds: 2, max_responses: 2 });
      assert.equal((await api(svc.baseUrl, 'POST', answered.url, { json: { option: 'approve' } })).status, 200);
      const r = await listEvents(svc.baseUrl, a, { after: 1, wait: 10 });
      assert.equal(r.json.events[0]?.type, 'approval.expired', r.text);
      assert.deepEqual(r.json.events[0].data, { approval_id: ap.id, question: 'Quick?', expired_at: ap.expires_at });
      assert.equal(r.json.events[0].dedupe_key, `approval:${ap.id}:expired`);
      assert.equal((await api(svc.baseUrl, 'POST', ap.url, { json: { option: 'approve' } })).status, 409);
      assert.match((await api(svc.baseUrl, 'GET', ap.url)).text, /expired at .* without an answer/);
      await sleep(3500); // several more sweeps, and the answered one's expiry
      const events = (await listEvents(svc.baseUrl, a, { limit: 100 })).json.events as { type: string }[];
      assert.deepEqual(
        events.map((e) => e.type),
        ['approval.decided', 'approval.expired'],
        'once; none for an approval that had an answer',
      );
      const got = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/approvals/${answered.id}`, { token: a.token });
      assert.equal(got.json.approval.status, 'decided');
    } finally {
      await svc.stop();
    }
  });

  it('two instances on one database expire each approval exactly once', { skip: onlyPostgres, timeout: 60_000 }, async () => {
    const storage = await createTestStorage();
    const env = { MIN_APPROVAL_SECONDS: '1', SWEEP_INTERVAL_SECONDS: '1' };
    const s1 = await startTestService(env, storage);
    const s2 = await startTestService(env, storage);
    try {
      const a = await createAddress(s1.baseUrl);
      const ids = [];
      for (let i = 0; i < 20; i++) ids.push((await createApproval(s1.baseUrl, a, { question: `q${i}`, expires_in_seconds: 1 + (i % 2) })).id);
      // Both sweepers run every second; also race them by hand.
      await sleep(2200);
      await Promise.all([s1, s2, s1, s2].map((s) => s.running.app.inject({ method: 'GET', url: '/healthz' })));
      // Every approval has expired once the sweeps got to it: waited for as that condition (a busy
      // machine delays sweeps), then two more sweep intervals in which a second expiry would show.
      const expiredBy = performance.now() + 30_000;
      const expired = async () => (await listEvents(s2.baseUrl, a, { limit: 100 })).json.events as { type: string; data: { approval_id: string } }[];
      while ((await expired()).length < ids.length && performance.now() < expiredBy) await sleep(200);
      await sleep(2000);
      const events = await expired();
      assert.deepEqual(events.map((e) => e.data.approval_id).sort(), [...ids].sort(), 'each approval expired exactly once');
      assert.ok(events.every((e) => e.type === 'approval.expired'));
    } finally {
      await s1.stop({ keepStorage: true });
      await s2.stop({ keepStorage: true });
      await storage.drop();
    }
  });
});

describe(`a slow answer (${STORE})`, () => {
  it('a form POST sent byte by byte is cut off after REQUEST_TIMEOUT_MS, records nothing, and others are served meanwhile', { timeout: 30_000 }, async () => {
    const { connect } = await import('node:net');
    const svc = await startTestService({ REQUEST_TIMEOUT_MS: '2000', HEADERS_TIMEOUT_MS: '1000' });
    try {
      const a = await createAddress(svc.baseUrl);
      const slow = await createApproval(svc.baseUrl, a, { question: 'slow', max_responses: 5 });
      const body = form({ option: 'approve', reason: 'x'.repeat(300) });
      const u = new URL(slow.url);
      const s = connect(Number(u.port), u.hostname);
      await new Promise((r) => s.once('connect', r));
      let reply = '';
      s.on('data', (d: Buffer) => {
        reply += d.toString();
      });
      const t0 = performance.now();
      const closed = new Promise<number>((r) => s.once('close', () => r(performance.now())));
      s.on('error', () => {});
      s.write(`POST ${u.pathname} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n`);
      let i = 0;
      const timer = setInterval(() => {
        if (!s.destroyed && i < body.length) s.write(body[i++]!);
      }, 50);
      // Meanwhile another person answers another approval at once.
      const other = await createApproval(svc.baseUrl, a, { question: 'fast' });
      assert.equal((await api(svc.baseUrl, 'POST', other.url, { json: { option: 'deny' } })).status, 200);
      const at = await closed;
      clearInterval(timer);
      assert.ok(at - t0 < 6000, `closed after ${(at - t0).toFixed(0)} ms`);
      assert.ok(i < body.length, 'the body never completed');
      assert.doesNotMatch(reply, /HTTP\/1\.1 20\d/);
      const events = await allEvents(svc.baseUrl, a);
      assert.deepEqual(
        events.map((e) => e.data.approval_id),
        [other.id],
        'the slow answer recorded nothing',
      );
    } finally {
      await svc.stop();
    }
  });
});

describe(`approvals on two instances (${STORE})`, () => {
  it('20 answers spread over two instances on one database record exactly max_responses', { skip: onlyPostgres, timeout: 60_000 }, async () => {
    const storage = await createTestStorage();
    const s1 = await startTestService({}, storage);
    const s2 = await startTestService({}, storage);
    try {
      const a = await createAddress(s1.baseUrl);
      const ap = await createApproval(s1.baseUrl, a, { question: 'Vote', max_responses: 5 });
      const onOther = ap.url.replace(s1.baseUrl, s2.baseUrl);
      const answers = await Promise.all(
        range(1, 20).map((i) => api(s1.baseUrl, 'POST', i % 2 ? ap.url : onOther, { json: { option: 'approve', reason: `r${i}` } })),
      );
      const statuses = answers.map((r) => r.status).sort();
      assert.deepEqual(statuses, [...Array(5).fill(200), ...Array(15).fill(409)], statuses.join(','));
      const events = await allEvents(s2.baseUrl, a);
      assert.deepEqual(
        events.map((e) => e.dedupe_key).sort(),
        range(1, 5).map((n) => `approval:${ap.id}:${n}`),
      );
      assert.deepEqual(
        events.map((e) => e.sequence),
        range(1, 5),
      );
    } finally {
      await s1.stop({ keepStorage: true });
      await s2.stop({ keepStorage: true });
      await storage.drop();
    }
  });
});

describe(`approvals and a crash (${STORE})`, () => {
  it('SIGKILL right after the 200 loses no answer, and the secret never reaches the log', { timeout: 60_000 }, async () => {
    const storage = await createTestStorage();
    let svc = await spawnService({ LOG_LEVEL: 'info' }, storage);
    try {
      const a = await createAddress(svc.baseUrl);
      const aps = [];
      for (let i = 0; i < 5; i++) aps.push(await createApproval(svc.baseUrl, a, { question: `q${i}` }));
      const answered = await Promise.all(
        aps.map((ap, i) =>
          i % 2 === 0
            ? api(svc.baseUrl, 'POST', ap.url, { json: { option: 'approve' } })
            : api(svc.baseUrl, 'POST', ap.url, { headers: FORM, body: form({ option: 'deny' }) }),
        ),
      );
      svc.proc.kill('SIGKILL');
      await svc.exited;
      assert.deepEqual(
        answered.map((r) => r.status),
        [200, 200, 200, 200, 200],
      );
      const log = svc.output();
      assert.match(log, /\/approve\/apr_[0-9a-z]{26}\/\[REDACTED\]/, 'the page requests are logged, redacted');
      for (const ap of aps) assert.ok(!log.includes(ap.url.slice(ap.url.lastIndexOf('/') + 1)), 'the secret is not in the log');

      svc = await spawnService({ LOG_LEVEL: 'warn' }, storage, svc);
      const events = await allEvents(svc.baseUrl, a);
      assert.deepEqual(events.map((e) => e.data.approval_id).sort(), aps.map((ap) => ap.id).sort(), 'every answered approval kept its event');
      for (const ap of aps) {
        assert.equal((await api(svc.baseUrl, 'POST', ap.url, { json: { option: 'approve' } })).status, 409, 'and its answer count');
      }
    } finally {
      svc.proc.kill('SIGTERM');
      await svc.exited;
      await storage.drop();
    }
  });
});

describe(`approvals over MCP (${STORE})`, () => {
  it('request_approval returns the url; wait_for_event matched on data.approval_id gets the answer; get_approval shows it', { timeout: 30_000 }, async () => {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const svc = await startTestService();
    try {
      const a = await createAddress(svc.baseUrl);
      const client = new Client({ name: 'approvals-test', version: '0.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(a.mcpUrl), { requestInit: { headers: { Authorization: `Bearer ${a.token}` } } }));
      const call = async (name: string, args: Record<string, unknown>) => {
        const r = await client.callTool({ name, arguments: args });
        assert.notEqual(r.isError, true, JSON.stringify(r.content));
        return r.structuredContent as Record<string, any>;
      };
      const { approval } = await call('request_approval', {
        question: 'Merge the release branch?',
        options: [
          { id: 'merge', label: 'Merge' },
          { id: 'close', label: 'Close' },
        ],
      });
      assert.match(approval.url, /\/approve\/apr_/);
      const waiting = call('wait_for_event', { match: { 'data.approval_id': approval.id }, timeout: 20 });
      await sleep(200);
      assert.equal((await api(svc.baseUrl, 'POST', approval.url, { json: { option: 'merge' } })).status, 200);
      const { event } = await waiting;
      assert.equal(event.type, 'approval.decided');
      assert.equal(event.data.option, 'merge');
      const got = await call('get_approval', { approval_id: approval.id });
      assert.equal(got.approval.status, 'decided');
      assert.equal(got.approval.answers[0].option, 'merge');
      const bad = await client.callTool({
        name: 'request_approval',
        arguments: {
          question: 'q',
          options: [
            { id: 'a', label: 'A' },
            { id: 'a', label: 'B' },
          ],
        },
      });
      assert.equal(bad.isError, true);
      assert.match(JSON.stringify(bad.content), /options\/1\/id/);
      await client.close();
    } finally {
      await svc.stop();
    }
  });
});
