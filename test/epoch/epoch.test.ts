// The store epoch and the address's last sequence on every answer that hands out events, on the
// store STORE selects (npm test runs both): an events page (immediate and long-polled), a claim and
// a stream carry them in headers (the stream in its first comment too), the page body keeps exactly
// {events, next_cursor, has_more}, and a cursor ahead of the queue is told apart from "nothing yet".
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { api, createAddress, deliver, listEvents, STORE, startTestService, type TestService } from '../helpers.js';

/** The stream's head: its headers and the text up to the first blank line. */
function streamHead(url: string, token: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; first: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
        if (text.includes('\n\n')) {
          resolve({ status: res.statusCode ?? 0, headers: res.headers, first: text.slice(0, text.indexOf('\n\n')) });
          req.destroy();
        }
      });
      res.on('error', () => {});
    });
    req.on('error', reject);
    req.end();
  });
}

describe(`store epoch and last sequence (${STORE})`, () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(async () => {
    await svc.stop();
  });

  it('pages say the epoch and the last sequence; an empty page body stays exactly {events, next_cursor, has_more}', async () => {
    const a = await createAddress(svc.baseUrl);
    const empty = await listEvents(svc.baseUrl, a);
    assert.equal(empty.status, 200);
    const epoch = empty.headers.get('return-address-epoch');
    assert.match(epoch ?? '', /^[0-9a-f]{32}$/);
    assert.equal(empty.headers.get('return-address-last-sequence'), '0');
    assert.deepEqual(empty.json, { events: [], next_cursor: 0, has_more: false });

    for (let i = 0; i < 3; i++) assert.equal((await deliver(svc.baseUrl, a, { data: i })).status, 202);
    const page = await listEvents(svc.baseUrl, a, { limit: 1 });
    assert.equal(page.headers.get('return-address-last-sequence'), '3', 'the address, not the page');
    assert.equal(page.headers.get('return-address-epoch'), epoch, 'one epoch per store');

    // A cursor past the queue (as after a restore): an empty page, has_more false, and the last sequence below it.
    const ahead = await listEvents(svc.baseUrl, a, { after: 10 });
    assert.deepEqual(ahead.json, { events: [], next_cursor: 10, has_more: false });
    assert.equal(ahead.headers.get('return-address-last-sequence'), '3');

    // A long-poll answered by its timeout and one answered by a delivery.
    const timedOut = await listEvents(svc.baseUrl, a, { after: 3, wait: 1 });
    assert.equal(timedOut.headers.get('return-address-last-sequence'), '3');
    const woken = listEvents(svc.baseUrl, a, { after: 3, wait: 10 });
    await new Promise((r) => setTimeout(r, 200));
    await deliver(svc.baseUrl, a, { data: 'late' });
    const w = await woken;
    assert.equal(w.json.events[0].sequence, 4);
    assert.equal(w.headers.get('return-address-last-sequence'), '4');
    assert.equal(w.headers.get('return-address-epoch'), epoch);

    // Errors carry neither.
    const bad = await listEvents(svc.baseUrl, a, { after: -1 });
    assert.equal(bad.status, 400);
    assert.equal(bad.headers.get('return-address-epoch'), null);
  });

  it('claims and streams carry them too (the stream in its first comment)', async () => {
    const a = await createAddress(svc.baseUrl);
    await deliver(svc.baseUrl, a, { data: 1 });
    const claim = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/claims`, { token: a.token, json: {} });
    assert.equal(claim.status, 200, claim.text);
    const epoch = claim.headers.get('return-address-epoch');
    assert.match(epoch ?? '', /^[0-9a-f]{32}$/);
    assert.equal(claim.headers.get('return-address-last-sequence'), '1');

    const head = await streamHead(`${svc.baseUrl}/api/v1/addresses/${a.id}/events/stream`, a.token);
    assert.equal(head.status, 200);
    assert.equal(head.headers['return-address-epoch'], epoch);
    assert.equal(head.headers['return-address-last-sequence'], '1');
    assert.match(head.first, new RegExp(`^retry: 1000\\n: stream of ${a.id} after 0 epoch ${epoch} last_sequence 1$`));
  });

  it('the OpenAPI document names the headers on the page, the claim and the stream', async () => {
    const doc = (await api(svc.baseUrl, 'GET', '/openapi.json')).json;
    for (const [path, method] of [
      ['/api/v1/addresses/{addressId}/events', 'get'],
      ['/api/v1/addresses/{addressId}/claims', 'post'],
      ['/api/v1/addresses/{addressId}/events/stream', 'get'],
    ] as const) {
      const headers = doc.paths[path][method].responses['200'].headers;
      assert.ok(headers?.['Return-Address-Epoch'] && headers['Return-Address-Last-Sequence'], `${method} ${path}`);
    }
  });
});
