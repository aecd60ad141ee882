// What text and numbers the API accepts, the same on both stores, so an event reads back as it was sent. Lone surrogates cannot
// be kept as sent in a text column (the stores replaced them differently), so they are refused
// there; inside data and metadata they stay JSON escapes. A number beyond a 64-bit float is refused
// instead of being stored as null. An Idempotency-Key is read as UTF-8 and limited in characters.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { api, createAddress, listEvents } from '../helpers.js';
import { type InjectedService, startInjectedService } from '../inject.js';

/** The header value Node would read for these UTF-8 bytes (fetch sends a latin1 string byte for byte). */
const utf8Header = (s: string) => Buffer.from(s, 'utf8').toString('latin1');

describe('text and number edges', () => {
  let svc: InjectedService;
  before(async () => {
    svc = await startInjectedService();
  });
  after(() => svc.stop());
  const post = (url: string, body: string, headers: Record<string, string> = {}) =>
    api(svc.baseUrl, 'POST', url, { body, headers: { 'content-type': 'application/json', ...headers } });

  it('a lone surrogate in a text field is 400; a surrogate pair (emoji) is kept; in data and metadata both are kept', async () => {
    const a = await createAddress(svc.baseUrl);
    for (const body of ['{"type":"\\ud800x"}', '{"source":"x\\udfff"}', '{"dedupe_key":"\\udc00"}']) {
      const r = await post(a.inboxUrl, body);
      assert.equal(r.status, 400, body);
      assert.match(r.json.error.message, /lone surrogate/);
    }
    assert.equal(
      (await api(svc.baseUrl, 'POST', '/api/v1/addresses', { body: '{"name":"\\ud83d"}', headers: { 'content-type': 'application/json' } })).status,
      400,
    );
    const ok = await post(a.inboxUrl, '{"type":"rocket.\\ud83d\\ude80","dedupe_key":"k-\\ud83d\\ude80","data":"\\ud800","metadata":{"m":"\\udc00"}}');
    assert.equal(ok.status, 202, ok.text);
    const [e] = (await listEvents(svc.baseUrl, a)).json.events;
    assert.deepEqual([e.type, e.dedupe_key, e.data, e.metadata.m], ['rocket.🚀', 'k-🚀', '\ud800', '\udc00']);
  });

  it('a number beyond a 64-bit float is 400, not stored as null; the largest finite ones are kept', async () => {
    const a = await createAddress(svc.baseUrl);
    for (const n of ['1e999', '-1e400', '9'.repeat(400)]) {
      const r = await post(a.inboxUrl, `{"data":{"n":${n}}}`);
      assert.equal(r.status, 400, n);
      assert.match(r.json.error.message, /64-bit float/);
    }
    const fine = await post(a.inboxUrl, '{"data":{"n":1.7976931348623157e308,"s":"1e999 in a string","tiny":1e-400}}');
    assert.equal(fine.status, 202, fine.text);
    assert.deepEqual((await listEvents(svc.baseUrl, a)).json.events[0].data, { n: 1.7976931348623157e308, s: '1e999 in a string', tiny: 0 });
  });

  it('an Idempotency-Key is UTF-8: it equals the same body dedupe_key and dedupes; 255 characters fit, 256 do not', async () => {
    const a = await createAddress(svc.baseUrl);
    const key = 'ключ-😀';
    const first = await post(a.inboxUrl, JSON.stringify({ dedupe_key: key }), { 'idempotency-key': utf8Header(key) });
    assert.equal(first.status, 202, first.text);
    assert.equal(first.json.event.dedupe_key, key);
    const again = await post(a.inboxUrl, '{}', { 'idempotency-key': utf8Header(key) });
    assert.deepEqual([again.status, again.json.event.id], [200, first.json.event.id]);
    // The capture URL reads it the same way: one key space.
    const captured = await api(svc.baseUrl, 'POST', a.body.endpoints.hook_url, { body: 'x', headers: { 'idempotency-key': utf8Header(key) } });
    assert.deepEqual([captured.status, captured.json.event.id], [200, first.json.event.id]);
    const long = 'я'.repeat(255);
    assert.equal((await post(a.inboxUrl, '{}', { 'idempotency-key': utf8Header(long) })).status, 202, '255 characters (510 bytes) fit');
    const tooLong = await post(a.inboxUrl, '{}', { 'idempotency-key': utf8Header(`${long}я`) });
    assert.equal(tooLong.status, 400);
    assert.match(tooLong.json.error.message, /Idempotency-Key/);
  });
});
