// GET /api/v1/addresses/{id}/events/stream over real sockets: order without a gap under concurrent
// deliveries, resuming, the heartbeat, its endings (delete, shutdown, a client that does not
// read), the credential checks in the same order as GET …/events, and two instances on PostgreSQL.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  api,
  createAddress,
  createTestStorage,
  deliver,
  onlyPostgres,
  range,
  sleep,
  spawnService,
  startTestService,
  type TestService,
  type TestStorage,
  within,
} from '../helpers.js';
import { openStream } from '../sse-client.js';

/** How long a wait for what a stream must send may take before the test fails: a bound for a hung
 * stream, not a speed claim, so a busy machine makes the test slower, not red. */
const HUNG_MS = 10_000;

const streamUrl = (svc: TestService, id: string, query = '') => `${svc.baseUrl}/api/v1/addresses/${id}/events/stream${query}`;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('event stream', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ SSE_HEARTBEAT_MS: '150', SSE_DRAIN_TIMEOUT_MS: '300' });
  });
  after(() => svc.stop());

  it('answers credential and query errors before streaming, in the order of GET …/events', async () => {
    const a = await createAddress(svc.baseUrl);
    const b = await createAddress(svc.baseUrl);
    const path = `/api/v1/addresses/${a.id}/events/stream`;
    const cases: [string, Record<string, string>, number, string][] = [
      [path, {}, 401, 'unauthorized'],
      [`${path}?bogus=1`, {}, 401, 'unauthorized'], // the credential before the query
      [`/api/v1/addresses/addr_00000000000000000000000000/events/stream?bogus=1`, bearer(a.token), 404, 'not_found'],
      [path, bearer(b.token), 401, 'unauthorized'],
      [`${path}?bogus=1`, bearer(a.token), 400, 'invalid_request'],
      [`${path}?after=-1`, bearer(a.token), 400, 'invalid_request'],
      [path, { ...bearer(a.token), 'last-event-id': 'abc' }, 400, 'invalid_request'],
      [path, { ...bearer(a.token), 'last-event-id': '9999999999999999' }, 400, 'invalid_request'],
    ];
    for (const [url, headers, status, code] of cases) {
      const r = await api(svc.baseUrl, 'GET', url, { headers });
      assert.equal(r.status, status, `${url} ${JSON.stringify(headers)}: ${r.text}`);
      assert.equal(r.json.error.code, code);
      assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
    }
    const ok = await openStream(streamUrl(svc, a.id), bearer(a.token));
    assert.equal(ok.status, 200);
    assert.match(String(ok.headers['content-type']), /^text\/event-stream/);
    assert.equal(ok.headers['cache-control'], 'no-store');
    ok.close();
  });

  it('sends 200 concurrent deliveries in sequence order, each once, without a gap', async () => {
    const a = await createAddress(svc.baseUrl);
    const s = await openStream(streamUrl(svc, a.id), bearer(a.token));
    const results = await Promise.all(range(1, 200).map((i) => deliver(svc.baseUrl, a, { type: 'n', data: { i } })));
    for (const r of results) assert.equal(r.status, 202, r.text);
    await s.waitForMessages(200);
    await sleep(100);
    assert.equal(s.messages.length, 200, 'no message twice');
    const events = s.events();
    assert.deepEqual(
      events.map((e) => e.sequence),
      range(1, 200),
    );
    assert.deepEqual(
      s.messages.map((m) => m.id),
      range(1, 200).map(String),
      'id: is the sequence',
    );
    assert.ok(s.messages.every((m) => m.event === 'event'));
    const bySeq = new Map(results.map((r) => [r.json.event.sequence, r.json.event]));
    for (const e of events) assert.deepEqual(e, bySeq.get(e.sequence), 'data is the Event as the API returns it');
    s.close();
  });

  it('resumes after Last-Event-ID, after ?after, and Last-Event-ID wins over ?after', async () => {
    const a = await createAddress(svc.baseUrl);
    for (const i of range(1, 5)) assert.equal((await deliver(svc.baseUrl, a, { data: i })).status, 202);
    const seqs = async (query: string, headers: Record<string, string>, n: number) => {
      const s = await openStream(streamUrl(svc, a.id, query), { ...bearer(a.token), ...headers });
      await s.waitForMessages(n);
      await sleep(150);
      s.close();
      return s.events().map((e) => e.sequence);
    };
    assert.deepEqual(await seqs('', { 'last-event-id': '3' }, 2), [4, 5]);
    assert.deepEqual(await seqs('?after=2', {}, 3), [3, 4, 5]);
    assert.deepEqual(await seqs('?after=1', { 'last-event-id': '4' }, 1), [5]);
    assert.deepEqual(await seqs('', {}, 5), [1, 2, 3, 4, 5]);
    // A cursor past the end: nothing until the next delivery, which then comes at once.
    const s = await openStream(streamUrl(svc, a.id, '?after=5'), bearer(a.token));
    await sleep(100);
    assert.equal(s.messages.length, 0);
    const t0 = performance.now();
    await deliver(svc.baseUrl, a, { data: 6 });
    await s.waitForMessages(1);
    // A bound for a stream that never wakes, not a speed claim (milliseconds when the machine is quiet).
    assert.ok(performance.now() - t0 < HUNG_MS);
    assert.equal(s.events()[0]!.sequence, 6);
    s.close();
  });

  it('sends a comment heartbeat after each idle interval (SSE_HEARTBEAT_MS)', async () => {
    const a = await createAddress(svc.baseUrl);
    const s = await openStream(streamUrl(svc, a.id), bearer(a.token));
    const t0 = performance.now();
    await s.waitForComments(4, HUNG_MS); // the opening comment, then pings
    const ms = performance.now() - t0;
    assert.ok(s.comments.filter((c) => c === 'ping').length >= 3, JSON.stringify(s.comments));
    // Never faster than the interval; slower only by the machine's load, and far below the default 15 s.
    assert.ok(ms >= 300 && ms < HUNG_MS, `three pings at 150 ms took ${ms} ms`);
    s.close();
  });

  it('ends the stream with an error event when the address is deleted', async () => {
    const a = await createAddress(svc.baseUrl);
    await deliver(svc.baseUrl, a, { data: 1 });
    const s = await openStream(streamUrl(svc, a.id), bearer(a.token));
    await s.waitForMessages(1);
    const t0 = performance.now();
    assert.equal((await api(svc.baseUrl, 'DELETE', `/api/v1/addresses/${a.id}`, { token: a.token })).status, 204);
    await s.ended;
    assert.ok(performance.now() - t0 < HUNG_MS);
    const last = s.messages.at(-1)!;
    assert.equal(last.event, 'error');
    assert.equal(JSON.parse(last.data).error.code, 'not_found');
    const emptyBy = performance.now() + HUNG_MS;
    while (svc.running.hub.size() > 0 && performance.now() < emptyBy) await sleep(20);
    assert.equal(svc.running.hub.size(), 0, 'no waiter left behind');
  });

  it('drops a client that does not read, holding a bounded amount for it', async () => {
    const a = await createAddress(svc.baseUrl);
    const url = new URL(streamUrl(svc, a.id));
    const socket = connect(Number(url.port), url.hostname);
    await new Promise((ok) => socket.once('connect', ok));
    socket.write(`GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${a.token}\r\n\r\n`);
    socket.pause();
    const closed = new Promise<void>((ok) => socket.once('close', () => ok()));
    // 60 events of ~200 KB: 12 MB, far more than the socket buffers on both sides hold.
    const blob = 'x'.repeat(200_000);
    for (const i of range(1, 60)) assert.equal((await deliver(svc.baseUrl, a, { data: { i, blob } })).status, 202);
    // The client has not read for longer than SSE_DRAIN_TIMEOUT_MS (300 ms): the server drops it,
    // which takes its stream off the hub. Waited for as that condition, not as a fixed sleep that a
    // busy machine could outlast before the server got to it.
    await sleep(600); // at least twice the drain timeout: a lower bound, which load cannot break
    const dropBy = performance.now() + HUNG_MS;
    while (svc.running.hub.size() > 0) {
      assert.ok(performance.now() < dropBy, 'the server did not drop the stream of a client that does not read');
      await sleep(50);
    }
    let received = 0;
    socket.on('data', (d: Buffer) => {
      received += d.length;
    });
    socket.resume();
    await within(closed, HUNG_MS, () => assert.fail('the server did not close the connection'));
    assert.ok(received < 60 * 200_000 * 0.8, `the server stopped writing: ${received} bytes reached the client`);
    assert.equal(svc.running.hub.size(), 0);
    // The service is unaffected: a reading client gets all 60 events, in order, once each. It
    // resumes from its Last-Event-ID when dropped, as EventSource does: on a starved machine this
    // test's own reader can fall SSE_DRAIN_TIMEOUT_MS behind (the rule above, applied to it).
    const sequences: number[] = [];
    for (let connection = 1; sequences.length < 60; connection++) {
      assert.ok(connection <= 20, `a reading client got ${sequences.length} of 60 events in 20 connections`);
      const last = sequences.at(-1);
      const s = await openStream(streamUrl(svc, a.id), { ...bearer(a.token), ...(last ? { 'last-event-id': String(last) } : {}) });
      await s.waitForMessages(60 - sequences.length, 3 * HUNG_MS).catch(() => {}); // ended early: resumed below
      s.close();
      sequences.push(...s.events().map((e) => e.sequence));
    }
    assert.deepEqual(sequences, range(1, 60));
  });
});

describe('event stream and shutdown', () => {
  it('a server shutdown ends open streams promptly', async () => {
    const svc = await startTestService();
    const a = await createAddress(svc.baseUrl);
    await deliver(svc.baseUrl, a, { data: 1 });
    const streams = await Promise.all(range(1, 5).map(() => openStream(streamUrl(svc, a.id), bearer(a.token))));
    await Promise.all(streams.map((s) => s.waitForMessages(1)));
    const t0 = performance.now();
    await svc.stop();
    await Promise.all(streams.map((s) => s.ended));
    const ms = performance.now() - t0;
    assert.ok(ms < 3000, `shutdown took ${ms} ms`);
    for (const s of streams) assert.ok(s.comments.includes('shutting down'), JSON.stringify(s.comments));
  });
});

describe('event stream and SIGTERM', () => {
  it('SIGTERM ends open streams at once and the process exits 0', { timeout: 60_000 }, async () => {
    const storage = await createTestStorage();
    try {
      const svc = await spawnService({ SSE_HEARTBEAT_MS: '30000' }, storage);
      const a = await createAddress(svc.baseUrl);
      await deliver(svc.baseUrl, a, { data: 1 });
      const s = await openStream(`${svc.baseUrl}/api/v1/addresses/${a.id}/events/stream`, bearer(a.token));
      await s.waitForMessages(1);
      const t0 = performance.now();
      svc.proc.kill('SIGTERM');
      await s.ended;
      const ms = performance.now() - t0;
      assert.ok(ms < 2000, `the stream ended ${ms} ms after SIGTERM`);
      assert.deepEqual(await svc.exited, { code: 0, signal: null });
      assert.ok(s.comments.includes('shutting down'));
    } finally {
      await storage.drop();
    }
  });

  it('HEAD answers the headers and holds nothing open', async () => {
    const svc = await startTestService();
    try {
      const a = await createAddress(svc.baseUrl);
      const r = await api(svc.baseUrl, 'HEAD', `/api/v1/addresses/${a.id}/events/stream`, { token: a.token });
      assert.equal(r.status, 200);
      assert.match(r.headers.get('content-type') ?? '', /^text\/event-stream/);
      assert.equal(svc.running.hub.size(), 0);
    } finally {
      await svc.stop();
    }
  });
});

describe('event stream across two instances', { skip: onlyPostgres }, () => {
  let storage: TestStorage;
  let a: TestService;
  let b: TestService;
  before(async () => {
    storage = await createTestStorage();
    [a, b] = await Promise.all([startTestService({}, storage), startTestService({}, storage)]);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await storage?.drop();
  });

  it('a stream on A gets every delivery made through A and B, in order and without a gap', async () => {
    const addr = await createAddress(a.baseUrl);
    const onA = await openStream(streamUrl(a, addr.id), bearer(addr.token));
    const onB = await openStream(streamUrl(b, addr.id), bearer(addr.token));
    const results = await Promise.all(range(1, 100).map((i) => deliver((i % 2 ? a : b).baseUrl, addr, { data: { i } })));
    for (const r of results) assert.equal(r.status, 202, r.text);
    for (const s of [onA, onB]) {
      await s.waitForMessages(100);
      assert.deepEqual(
        s.events().map((e) => e.sequence),
        range(1, 100),
      );
    }
    // A deletion through B ends the stream on A.
    assert.equal((await api(b.baseUrl, 'DELETE', `/api/v1/addresses/${addr.id}`, { token: addr.token })).status, 204);
    await within(onA.ended, 3000, () => assert.fail('the stream on A did not end'));
    assert.equal(onA.messages.at(-1)!.event, 'error');
    onB.close();
  });
});
