// A rotated read token ends the waits it opened (design.md, "Credential rotation"), over real
// sockets on the store STORE selects: long-polls and waiting claims answer 401 credentials_rotated,
// streams end with a final `event: error` frame of that code, MCP waits end with an error result;
// nothing committed after the rotation reaches them. Waits opened with the new token go on and get
// the next event; an inbox-secret rotation ends nothing; a webhook subscription keeps delivering. On
// PostgreSQL, waits on a second instance end when the first rotates, also when the rotation was
// committed while the second could not hear it (the resync re-checks). A liveness probe runs beside.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ReturnAddress } from '@return-address/client';
import pg from 'pg';
import { hashSecret, tokenIdentity } from '../../src/domain/credentials.js';
import type { PostgresStore } from '../../src/storage/postgres/postgres-store.js';
import { type Addr, api, createAddress, deliver, onlyPostgres, type Res, STORE, sleep, startTestService, type TestService, within } from '../helpers.js';
import { LIVENESS_MS, startLivenessProbe } from '../liveness-probe.js';
import { isEvent, openPush } from '../mcp/mcp-modern-client.js';
import { startReceiver, until } from '../push/receiver.js';
import { openStream, type SseStream } from '../sse-client.js';

const ENV = { MAX_STREAMS_PER_ADDRESS: '50', MAX_STREAMS_PER_CLIENT: '200' };
const BOUND_MS = 20_000;

const rotate = (svc: TestService, a: Addr, json: unknown) => api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/rotate`, { token: a.token, json });
const longPoll = (svc: TestService, a: Addr, token: string) => api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events?wait=25`, { token });
const claim = (svc: TestService, a: Addr, token: string) => api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/claims`, { token, json: { wait: 25 } });
const stream = (svc: TestService, a: Addr, token: string) =>
  openStream(`${svc.baseUrl}/api/v1/addresses/${a.id}/events/stream`, { authorization: `Bearer ${token}` });

/** Resolves once `svc`'s hub holds `n` waits watching their read token: every wait opened is registered. */
const watching = (svc: TestService, n: number, what: string) =>
  until(() => svc.running.hub.tokenWatches() === n, BOUND_MS, `${n} token watches: ${what}`).catch((err: Error) => {
    throw new Error(`${err.message} (holds ${svc.running.hub.tokenWatches()})`);
  });

function assertRotated(r: Res, what: string): void {
  assert.equal(r.status, 401, `${what}: ${r.text}`);
  assert.deepEqual(Object.keys(r.json), ['error'], r.text);
  assert.equal(r.json.error.code, 'credentials_rotated', r.text);
  assert.match(r.json.error.message, /rotated/);
  assert.match(r.json.error.message, /new read token/);
  assert.match(r.headers.get('www-authenticate') ?? '', /^Bearer realm="return-address", error="invalid_token"$/);
}

async function assertStreamRotated(s: SseStream, what: string): Promise<void> {
  await within(s.ended, BOUND_MS, () => assert.fail(`${what}: the stream did not end`));
  const last = s.messages.at(-1);
  assert.equal(last?.event, 'error', `${what}: ${JSON.stringify(s.messages)}`);
  assert.equal(JSON.parse(last.data).error.code, 'credentials_rotated');
}

describe(`a rotated read token ends the waits it opened (${STORE})`, () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ ...ENV, PUSH_ALLOW_PRIVATE: 'true' });
  });
  after(async () => {
    await svc.stop();
  });

  it('10 long-polls, 10 streams and 2 waiting claims of the old token end at once; those of the new token stay and get the next event', async () => {
    const a = await createAddress(svc.baseUrl);
    const probe = startLivenessProbe(svc.baseUrl);
    const base = svc.running.hub.tokenWatches();
    const polls = Array.from({ length: 10 }, () => longPoll(svc, a, a.token));
    const claims = Array.from({ length: 2 }, () => claim(svc, a, a.token));
    const streams = await Promise.all(Array.from({ length: 10 }, () => stream(svc, a, a.token)));
    for (const s of streams) assert.equal(s.status, 200, s.body);
    await watching(svc, base + 22, 'every old wait is registered before the rotation');

    const r = await rotate(svc, a, { read_token: true });
    assert.equal(r.status, 200, r.text);
    const token = r.json.credentials.read_token as string;
    // Nothing was delivered: every one of them ends because of the rotation alone.
    for (const [i, p] of (await Promise.all(polls)).entries()) assertRotated(p, `long-poll ${i}`);
    for (const [i, c] of (await Promise.all(claims)).entries()) assertRotated(c, `claim ${i}`);
    for (const [i, s] of streams.entries()) await assertStreamRotated(s, `stream ${i}`);
    for (const s of streams) assert.deepEqual(s.events(), [], 'no event reached an old stream');
    assert.equal(svc.running.hub.tokenWatches(), base, 'no old watch is left');

    const fresh = { ...a, token };
    const newPolls = Array.from({ length: 3 }, () => longPoll(svc, fresh, token));
    const newClaim = claim(svc, fresh, token);
    const newStreams = await Promise.all(Array.from({ length: 3 }, () => stream(svc, fresh, token)));
    await watching(svc, base + 7, 'the new waits are registered');
    const d = await deliver(svc.baseUrl, a, { data: { n: 1 } });
    assert.equal(d.status, 202, d.text);
    for (const p of await Promise.all(newPolls)) {
      assert.equal(p.status, 200, p.text);
      assert.deepEqual(
        p.json.events.map((e: { sequence: number }) => e.sequence),
        [1],
      );
    }
    const c = await newClaim;
    assert.equal(c.status, 200, c.text);
    assert.equal(c.json.claims.length, 1, c.text);
    for (const s of newStreams) {
      await s.waitForMessages(1, BOUND_MS);
      assert.deepEqual(
        s.events().map((e) => e.sequence),
        [1],
      );
      s.close();
    }
    const { maxMs, failures } = await probe.stop();
    assert.deepEqual(failures, []);
    assert.ok(maxMs < LIVENESS_MS, `healthz answered within ${LIVENESS_MS} ms (slowest ${maxMs} ms)`);
  });

  it('deliveries racing the rotation: an old stream gets nothing committed after the answer, and ends with the error frame', async () => {
    const a = await createAddress(svc.baseUrl);
    const base = svc.running.hub.tokenWatches();
    const streams = await Promise.all(Array.from({ length: 4 }, () => stream(svc, a, a.token)));
    await watching(svc, base + 4, 'the streams are registered');
    let stop = false;
    let firstAfter = Number.POSITIVE_INFINITY;
    let answered = false;
    const sender = (async () => {
      while (!stop) {
        const sentAfter = answered;
        const d = await deliver(svc.baseUrl, a, { data: 'x' });
        assert.equal(d.status, 202, d.text);
        if (sentAfter) firstAfter = Math.min(firstAfter, d.json.event.sequence);
      }
    })();
    try {
      await streams[0]!.waitForMessages(3, BOUND_MS);
      const r = await rotate(svc, a, { read_token: true });
      assert.equal(r.status, 200, r.text);
      answered = true;
      for (const [i, s] of streams.entries()) await assertStreamRotated(s, `stream ${i}`);
      await until(() => firstAfter !== Number.POSITIVE_INFINITY, BOUND_MS, 'a delivery sent after the answer');
    } finally {
      stop = true;
      await sender;
    }
    for (const s of streams) {
      const seqs = s.events().map((e) => e.sequence);
      assert.ok(
        seqs.every((q) => q < firstAfter),
        `old stream got ${seqs.join(',')}; the first delivery after the answer was ${firstAfter}`,
      );
    }
  });

  it('a rotation of the inbox secret only ends no wait', async () => {
    const a = await createAddress(svc.baseUrl);
    const base = svc.running.hub.tokenWatches();
    const poll = longPoll(svc, a, a.token);
    const s = await stream(svc, a, a.token);
    await watching(svc, base + 2, 'both registered');
    const r = await rotate(svc, a, { inbox_secret: true });
    assert.equal(r.status, 200, r.text);
    assert.equal(svc.running.hub.tokenWatches(), base + 2, 'both still watch');
    const d = await api(svc.baseUrl, 'POST', r.json.endpoints.inbox_url, { json: { data: 'after' } });
    assert.equal(d.status, 202, d.text);
    const p = await poll;
    assert.equal(p.status, 200, p.text);
    assert.equal(p.json.events.length, 1);
    await s.waitForMessages(1, BOUND_MS);
    assert.deepEqual(
      s.events().map((e) => e.sequence),
      [1],
    );
    assert.equal(s.isEnded(), false);
    s.close();
  });

  it('MCP: wait_for_event and a waiting claim_events end with a credentials_rotated error result; events/stream ends with a terminated notification', async () => {
    const a = await createAddress(svc.baseUrl);
    const base = svc.running.hub.tokenWatches();
    const tool = (name: string, args: Record<string, unknown>) =>
      api(svc.baseUrl, 'POST', a.mcpUrl, {
        token: a.token,
        headers: { accept: 'application/json, text/event-stream' },
        json: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } },
      });
    const wait = tool('wait_for_event', { timeout: 25 });
    const claimed = tool('claim_events', { wait: 25 });
    const push = await openPush(a.mcpUrl, a.token, { name: 'return_address.event', cursor: null });
    assert.equal(push.status, 200, push.body);
    await watching(svc, base + 3, 'the MCP waits are registered');
    const r = await rotate(svc, a, { read_token: true });
    assert.equal(r.status, 200, r.text);
    for (const [what, answer] of [
      ['wait_for_event', await wait],
      ['claim_events', await claimed],
    ] as const) {
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.json.result.isError, true, `${what}: ${answer.text}`);
      assert.equal(JSON.parse(answer.json.result.content[0].text).error.code, 'credentials_rotated', answer.text);
    }
    const end = await push.next((m) => m.method === 'notifications/events/terminated', BOUND_MS);
    assert.equal(end.params.error.data.code, 'credentials_rotated', JSON.stringify(end));
    await within(push.ended, BOUND_MS, () => assert.fail('events/stream did not end'));
    assert.equal(push.messages.filter(isEvent).length, 0);
    assert.equal(push.messages.at(-1).result?.resultType, 'complete', 'the final frame is the request result');
  });

  it('the TypeScript client that rotates its own token keeps its waitFor: the wait ended for the old token is read again with the new one', async () => {
    const ra = await ReturnAddress.create({ url: svc.baseUrl });
    const base = svc.running.hub.tokenWatches();
    const waiting = ra.waitFor({ timeout: 20 });
    await watching(svc, base + 1, 'the client long-polls with its first token');
    const old = ra.token;
    await ra.rotate({ readToken: true });
    // The old wait ended (its watch is gone); the client's next long-poll, with the new token, watches again.
    await watching(svc, base + 1, 'the client waits again');
    assert.notEqual(ra.token, old);
    const d = await api(svc.baseUrl, 'POST', ra.inboxUrl!, { json: { data: 'after rotate' } });
    assert.equal(d.status, 202, d.text);
    const got = await waiting;
    assert.equal(got.event?.data, 'after rotate');
  });

  it("…and when the wait's 401 comes back before rotate()'s own answer (a busy machine), it still reads again with the new token", async () => {
    // rotate()'s answer is held 500 ms after it arrived, so the ended wait hears credentials_rotated
    // while the client still holds the old token (the order a CPU hog once produced here).
    const slowRotate: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (String(input).endsWith('/rotate')) await sleep(500);
      return res;
    };
    const ra = await ReturnAddress.create({ url: svc.baseUrl, fetch: slowRotate });
    const base = svc.running.hub.tokenWatches();
    const waiting = ra.waitFor({ timeout: 20 });
    await watching(svc, base + 1, 'the client long-polls with its first token');
    await ra.rotate({ readToken: true });
    await watching(svc, base + 1, 'the client waits again, with the new token');
    const d = await api(svc.baseUrl, 'POST', ra.inboxUrl!, { json: { data: 'after a slow rotate' } });
    assert.equal(d.status, 202, d.text);
    assert.equal((await waiting).event?.data, 'after a slow rotate');
  });

  it("a webhook subscription is the owner's, not a reader's: it goes on delivering after the read token is rotated", async () => {
    const rx = await startReceiver();
    try {
      const a = await createAddress(svc.baseUrl);
      const sub = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/subscriptions`, { token: a.token, json: { url: rx.url } });
      assert.equal(sub.status, 201, sub.text);
      assert.equal((await deliver(svc.baseUrl, a, { data: 1 })).status, 202);
      await until(() => rx.received.length >= 1, BOUND_MS, 'the first delivery');
      const r = await rotate(svc, a, { read_token: true });
      assert.equal(r.status, 200, r.text);
      assert.equal((await deliver(svc.baseUrl, a, { data: 2 })).status, 202);
      await until(() => rx.received.length >= 2, BOUND_MS, 'the delivery after the rotation');
      assert.deepEqual(
        rx.received.map((x) => x.event.sequence),
        [1, 2],
      );
    } finally {
      await rx.close();
    }
  });
});

describe('PostgreSQL: a rotation on one instance ends the waits on another', { skip: onlyPostgres }, () => {
  let one: TestService;
  let two: TestService;
  before(async () => {
    one = await startTestService(ENV);
    two = await startTestService(ENV, one.storage);
  });
  after(async () => {
    await two.stop();
    await one.stop();
  });

  it('long-polls, streams and a waiting claim on B, old token, end when A rotates; B waits of the new token stay and get the next event', async () => {
    const a = await createAddress(one.baseUrl);
    const base = two.running.hub.tokenWatches();
    const polls = Array.from({ length: 5 }, () => longPoll(two, a, a.token));
    const claimed = claim(two, a, a.token);
    const streams = await Promise.all(Array.from({ length: 5 }, () => stream(two, a, a.token)));
    await watching(two, base + 11, 'the old waits on B are registered');
    const r = await rotate(one, a, { read_token: true });
    assert.equal(r.status, 200, r.text);
    const token = r.json.credentials.read_token as string;
    for (const [i, p] of (await Promise.all(polls)).entries()) assertRotated(p, `long-poll ${i} on B`);
    assertRotated(await claimed, 'claim on B');
    for (const [i, s] of streams.entries()) await assertStreamRotated(s, `stream ${i} on B`);
    assert.equal(two.running.hub.tokenWatches(), base);

    const fresh = { ...a, token };
    const poll = longPoll(two, fresh, token);
    const s = await stream(two, fresh, token);
    await watching(two, base + 2, 'the new waits on B are registered');
    assert.equal((await deliver(one.baseUrl, a, { data: 'next' })).status, 202);
    const p = await poll;
    assert.equal(p.status, 200, p.text);
    assert.equal(p.json.events.length, 1);
    await s.waitForMessages(1, BOUND_MS);
    assert.equal(s.events().length, 1);
    s.close();
  });

  it("a rotation committed while B's LISTEN connection is down still ends B's waits: the resync re-checks their tokens", async () => {
    const listener = () => (two.running.store as PostgresStore).listenerStatus()!;
    const a = await createAddress(one.baseUrl);
    await until(() => listener().state === 'listening', BOUND_MS, 'B listening');
    const base = two.running.hub.tokenWatches();
    const poll = longPoll(two, a, a.token);
    const s = await stream(two, a, a.token);
    await watching(two, base + 2, 'the waits on B are registered');
    const admin = new pg.Client({ connectionString: one.storage.databaseUrl });
    await admin.connect();
    try {
      await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'return-address-listener'`,
      );
    } finally {
      await admin.end();
    }
    while (listener().state === 'listening') await sleep(1);
    const r = await rotate(one, a, { read_token: true });
    assert.equal(r.status, 200, r.text);
    assert.notEqual(listener().state, 'listening', 'the rotation was committed while B was not listening');
    assertRotated(await poll, 'long-poll on B');
    await assertStreamRotated(s, 'stream on B');
    assert.equal(listener().state, 'listening');
  });

  it('the change channel carries one rotation notice per replaced read token, naming the old one; none for an inbox rotation or a lost race', async () => {
    const listen = new pg.Client({ connectionString: one.storage.databaseUrl });
    const heard: string[] = [];
    await listen.connect();
    try {
      listen.on('notification', (n) => {
        if (n.payload?.includes(' rotated ')) heard.push(n.payload);
      });
      await listen.query('LISTEN ra_address_changed');
      const a = await createAddress(one.baseUrl);
      assert.equal((await rotate(one, a, { inbox_secret: true })).status, 200);
      const answers = await Promise.all(Array.from({ length: 8 }, () => rotate(one, a, { read_token: true })));
      assert.equal(answers.filter((r) => r.status === 200).length, 1, answers.map((r) => r.status).join(','));
      // A marker after them: NOTIFYs arrive in commit order, so once it is heard every rotation's has been.
      await listen.query(`NOTIFY ra_address_changed, 'addr_marker rotated ${'f'.repeat(32)}'`);
      await until(() => heard.some((p) => p.startsWith('addr_marker ')), BOUND_MS, 'the marker');
      assert.deepEqual(
        heard.filter((p) => !p.startsWith('addr_marker ')),
        [`${a.id} rotated ${tokenIdentity(hashSecret(a.token))}`],
      );
    } finally {
      await listen.end();
    }
  });
});
