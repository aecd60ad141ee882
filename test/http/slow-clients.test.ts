// Slow clients cannot hold the service: a request must arrive whole within REQUEST_TIMEOUT_MS,
// its headers within HEADERS_TIMEOUT_MS; meanwhile everyone else is served, and a long-poll (whose
// request arrived at once) is not cut by those timeouts.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { api, createAddress, deliver, listEvents, startTestService, type TestService } from '../helpers.js';

function openSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
}

/** Resolves with what the server sent before closing, and when. */
function untilClosed(s: Socket): Promise<{ data: string; at: number }> {
  let data = '';
  s.on('data', (d) => {
    data += d.toString();
  });
  return new Promise((resolve) => s.once('close', () => resolve({ data, at: performance.now() })));
}

describe('slow clients', () => {
  let svc: TestService;
  let port: number;
  before(async () => {
    svc = await startTestService({ REQUEST_TIMEOUT_MS: '2000', HEADERS_TIMEOUT_MS: '1000' });
    port = Number(new URL(svc.baseUrl).port);
  });
  after(() => svc.stop());

  it('a client that never finishes its headers is cut off after HEADERS_TIMEOUT_MS', async () => {
    const s = await openSocket(port);
    const t0 = performance.now();
    const closed = untilClosed(s);
    s.write('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    const timer = setInterval(() => {
      if (!s.destroyed) s.write('a');
    }, 100);
    const { data, at } = await closed;
    clearInterval(timer);
    assert.ok(at - t0 < 4500, `closed after ${(at - t0).toFixed(0)} ms`);
    assert.match(data, /^HTTP\/1\.1 408/, `answered 408: ${data.slice(0, 80)}`);
    assert.match(data, /"code":"invalid_request"/);
  });

  it('a client sending its body byte by byte is cut off after REQUEST_TIMEOUT_MS while others are served', async () => {
    const a = await createAddress(svc.baseUrl);
    const body = JSON.stringify({ data: 'x'.repeat(200) });
    const s = await openSocket(port);
    const t0 = performance.now();
    const closed = untilClosed(s);
    s.write(`POST ${new URL(a.inboxUrl).pathname} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
    let i = 0;
    const timer = setInterval(() => {
      if (!s.destroyed && i < body.length) s.write(body[i++]!);
    }, 50);
    // Meanwhile the service answers others promptly.
    for (let k = 0; k < 5; k++) assert.equal((await deliver(svc.baseUrl, a, { data: k })).status, 202);
    const { at, data } = await closed;
    clearInterval(timer);
    assert.ok(at - t0 < 6000, `closed after ${(at - t0).toFixed(0)} ms`);
    assert.ok(i < body.length, 'the body never completed');
    assert.doesNotMatch(data, /HTTP\/1\.1 20\d/);
    const stored = (await listEvents(svc.baseUrl, a)).json.events;
    assert.equal(stored.length, 5, 'the slow delivery stored nothing');
  });

  it('a long-poll outlives REQUEST_TIMEOUT_MS (its request arrived at once)', async () => {
    const a = await createAddress(svc.baseUrl);
    const r = await listEvents(svc.baseUrl, a, { wait: 3 });
    assert.equal(r.status, 200);
    assert.ok(r.ms >= 2900, `held its full wait (${r.ms.toFixed(0)} ms)`);
    assert.equal((await api(svc.baseUrl, 'GET', '/healthz')).status, 200);
  });
});
