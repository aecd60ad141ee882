// A client must not be able to stall the service with one request: the capture URL and every route bound the work a request causes, not only its bytes.
// Each attack runs beside a liveness probe (/healthz within 1 s); on the old code each one held the
// event loop for seconds (repeated keys were copied per repeat, Stripe's HMAC was recomputed per v1
// entry) or, for paused uploads, held gigabytes.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { type Addr, api, createAddress, listEvents, sleep, startTestService, type TestService } from '../helpers.js';
import { LIVENESS_MS, startLivenessProbe } from '../liveness-probe.js';

const hookUrl = (a: Addr): string => a.body.endpoints.hook_url;

async function withProbe<T>(svc: TestService, attack: () => Promise<T>): Promise<T> {
  const probe = startLivenessProbe(svc.baseUrl);
  try {
    return await attack();
  } finally {
    const { maxMs, answers, failures } = await probe.stop();
    assert.deepEqual(failures, []);
    assert.ok(answers > 0, 'the probe ran');
    assert.ok(maxMs < LIVENESS_MS, `/healthz answered within ${LIVENESS_MS} ms during the attack (slowest: ${Math.round(maxMs)} ms)`);
  }
}

describe('linear parsers under repeated keys and signature lists', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(async () => {
    await svc.stop();
  });

  it('a form-encoded capture repeating one key (several 80 KB bodies) is stored with every value', async () => {
    const a = await createAddress(svc.baseUrl);
    const body = Array.from({ length: 27_000 }, () => 'k=v').join('&');
    assert.ok(body.length >= 80_000);
    const results = await withProbe(svc, () =>
      Promise.all(
        Array.from({ length: 4 }, () => api(svc.baseUrl, 'POST', hookUrl(a), { body, headers: { 'content-type': 'application/x-www-form-urlencoded' } })),
      ),
    );
    for (const r of results) assert.equal(r.status, 202, r.text);
    const page = await listEvents(svc.baseUrl, a, { limit: 1 });
    assert.equal(page.json.events[0].data.body.k.length, 27_000);
  });

  it('a query string repeating one key, unauthenticated, on any route: linear (30 URLs of 14 KB at once)', async () => {
    const query = Array.from({ length: 3500 }, () => 'a=1').join('&');
    const results = await withProbe(svc, () => Promise.all(Array.from({ length: 30 }, () => api(svc.baseUrl, 'GET', `/healthz?${query}`))));
    for (const r of results) {
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.error.code, 'invalid_request');
    }
  });

  it('a Stripe-Signature of 2,000 v1 entries (about what 16 KB of headers hold) over a 4 MB body: the HMAC is computed once, 16 candidates compared', async () => {
    const a = await createAddress(svc.baseUrl);
    const put = await api(svc.baseUrl, 'PUT', `/api/v1/addresses/${a.id}/signing-secrets`, { token: a.token, json: { stripe: 'whsec_test' } });
    assert.equal(put.status, 200, put.text);
    const t = Math.floor(Date.now() / 1000);
    const header = `t=${t},${Array.from({ length: 2000 }, (_, i) => `v1=${i.toString(36)}`).join(',')}`;
    const body = JSON.stringify({ id: 'evt_1', object: 'event', type: 'x', pad: 'p'.repeat(4 * 1024 * 1024) });
    const results = await withProbe(svc, () =>
      Promise.all(
        Array.from({ length: 3 }, () =>
          api(svc.baseUrl, 'POST', hookUrl(a), { body, headers: { 'content-type': 'application/json', 'stripe-signature': header } }),
        ),
      ),
    );
    assert.ok(
      results.every((r) => r.status === 202 || r.status === 200),
      results.map((r) => r.status).join(),
    );
    const page = await listEvents(svc.baseUrl, a, { limit: 1 });
    const sig = page.json.events[0].data.signature;
    assert.equal(sig.verified, false);
    assert.match(sig.reason, /first 16 .*1984 more were not compared/);
  });
});

describe('in-flight capture bytes share one budget (MAX_INFLIGHT_CAPTURE_BYTES)', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ MAX_CAPTURE_BYTES: String(1024 * 1024), MAX_INFLIGHT_CAPTURE_BYTES: String(2 * 1024 * 1024) });
  });
  after(async () => {
    await svc.stop();
  });

  /** A capture upload that sends `sent` of its declared bytes, then pauses. */
  function pausedUpload(a: Addr, declared: number, sent: number): Promise<{ socket: Socket; answer: Promise<string> }> {
    const url = new URL(hookUrl(a));
    return new Promise((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => {
        socket.write(`POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/octet-stream\r\nContent-Length: ${declared}\r\n\r\n`);
        socket.write(Buffer.alloc(sent, 0x61));
        let text = '';
        const answer = new Promise<string>((r) => {
          socket.on('data', (d: Buffer) => {
            text += d.toString('latin1');
          });
          socket.on('close', () => r(text));
          socket.on('error', () => r(text));
        });
        resolve({ socket, answer });
      });
      socket.once('error', reject);
    });
  }

  it('paused uploads hold at most the budget; beyond it 503 unavailable with Retry-After; released bytes are usable again', async () => {
    const a = await createAddress(svc.baseUrl);
    const held = await withProbe(svc, async () => {
      const uploads = [await pausedUpload(a, 1024 * 1024, 900 * 1024), await pausedUpload(a, 1024 * 1024, 900 * 1024)];
      await sleep(300); // the server has read what was sent
      const refused = await api(svc.baseUrl, 'POST', hookUrl(a), { body: 'x'.repeat(512 * 1024), headers: { 'content-type': 'text/plain' } });
      assert.equal(refused.status, 503, refused.text);
      assert.equal(refused.json.error.code, 'unavailable');
      assert.match(refused.json.error.message, /MAX_INFLIGHT_CAPTURE_BYTES/);
      assert.equal(refused.headers.get('retry-after'), '5');
      // A full capture budget is not a store failure: the service stays ready.
      assert.equal((await api(svc.baseUrl, 'GET', '/readyz')).status, 200);
      // A small capture still fits beside them.
      const small = await api(svc.baseUrl, 'POST', hookUrl(a), { body: 'small', headers: { 'content-type': 'text/plain' } });
      assert.equal(small.status, 202, small.text);
      return uploads;
    });
    for (const u of held) u.socket.destroy();
    await sleep(200);
    const after = await api(svc.baseUrl, 'POST', hookUrl(a), { body: 'x'.repeat(1000 * 1024), headers: { 'content-type': 'text/plain' } });
    assert.equal(after.status, 202, 'the bytes of closed uploads were given back');
  });

  it('a chunked upload with no Content-Length is counted as it arrives', async () => {
    const a = await createAddress(svc.baseUrl);
    const first = await pausedUpload(a, 1024 * 1024, 1000 * 1024);
    const second = await pausedUpload(a, 1024 * 1024, 1000 * 1024);
    await sleep(300);
    const url = new URL(hookUrl(a));
    const answer = await new Promise<string>((resolve) => {
      const s = connect(Number(url.port), url.hostname, () => {
        s.write(`POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n`);
        const chunk = Buffer.alloc(200 * 1024, 0x62);
        s.write(`${chunk.length.toString(16)}\r\n`);
        s.write(chunk);
        s.write('\r\n0\r\n\r\n');
      });
      let text = '';
      s.on('data', (d: Buffer) => {
        text += d.toString('latin1');
        if (/\r\n\r\n/.test(text)) s.destroy();
      });
      s.on('close', () => resolve(text));
      s.on('error', () => resolve(text));
    });
    assert.match(answer, /^HTTP\/1\.1 503/);
    first.socket.destroy();
    second.socket.destroy();
  });
});
