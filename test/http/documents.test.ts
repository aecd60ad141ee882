// /openapi.json is generated from the route schemas; it must be a valid OpenAPI 3.1 document that
// lists every route the app serves. The llms guides carry this deployment's real values.
import SwaggerParser from '@apidevtools/swagger-parser';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { api, startTestService, type TestService } from '../helpers.js';

describe('published documents', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ MAX_EVENTS_PER_ADDRESS: '1234', EMAIL_DOMAIN: 'mail.example.test' });
  });
  after(() => svc.stop());

  it('openapi.json validates as OpenAPI 3.1', async () => {
    const res = await api(svc.baseUrl, 'GET', '/openapi.json');
    assert.equal(res.status, 200);
    const doc = res.json;
    assert.equal(doc.openapi, '3.1.0');
    // validate() dereferences in place; give it a copy.
    await SwaggerParser.validate(structuredClone(doc));
    assert.deepEqual(doc.servers, [{ url: svc.baseUrl }]);
  });

  it('lists every route the app serves, with its methods', async () => {
    const doc = (await api(svc.baseUrl, 'GET', '/openapi.json')).json;
    const served = svc.running.app.printRoutes({ commonPrefix: false });
    const paths = Object.keys(doc.paths);
    for (const p of ['/api/v1/addresses', '/api/v1/addresses/{addressId}', '/api/v1/addresses/{addressId}/events',
      '/api/v1/addresses/{addressId}/events/{eventId}/ack', '/api/v1/inbox/{addressId}/{secret}', '/healthz', '/readyz',
      '/openapi.json', '/llms.txt', '/llms-full.txt', '/api/v1/addresses/{addressId}/events/stream', '/inspect']) {
      assert.ok(paths.includes(p), `${p} documented`);
      const fastifyPath = p.replace(/\{(\w+)\}/g, ':$1');
      assert.ok(served.includes(fastifyPath.split('/').pop()!), `${fastifyPath} served`);
    }
  });

  it('the guides carry the real base URL, email domain and limits', async () => {
    const full = await api(svc.baseUrl, 'GET', '/llms-full.txt');
    const short = await api(svc.baseUrl, 'GET', '/llms.txt');
    for (const r of [full, short]) {
      assert.match(r.headers.get('content-type') ?? '', /^text\/plain/);
      assert.ok(r.text.includes(svc.baseUrl));
      assert.ok(!/\{base_url\}|undefined|NaN|\[object Object\]/.test(r.text), 'no unfilled placeholders');
    }
    assert.ok(full.text.includes('@mail.example.test'));
    assert.ok(full.text.includes('1234'), 'the configured MAX_EVENTS_PER_ADDRESS is stated');
    assert.ok(full.text.includes('/events/stream') && full.text.includes('Last-Event-ID') && full.text.includes('/inspect'), 'the event stream and the inspector are documented');
  });

  it('documents the event stream as text/event-stream with its query and Last-Event-ID header', async () => {
    const doc = (await api(svc.baseUrl, 'GET', '/openapi.json')).json;
    const op = doc.paths['/api/v1/addresses/{addressId}/events/stream'].get;
    assert.ok(op.responses['200'].content['text/event-stream'], 'a text/event-stream response');
    assert.deepEqual(op.security, [{ bearerAuth: [] }]);
    const params = op.parameters.map((p: { in: string; name: string }) => `${p.in}:${p.name}`);
    for (const p of ['path:addressId', 'query:after', 'header:last-event-id']) assert.ok(params.includes(p), `${p} declared`);
    assert.ok(['401', '404', '400'].every((s) => op.responses[s]), 'its errors');
    assert.ok(doc.paths['/inspect'].get.responses['200'].content['text/html']);
  });

  it('email events document data.extracted and data.authentication in llms-full.txt and the OpenAPI', async () => {
    const full = (await api(svc.baseUrl, 'GET', '/llms-full.txt')).text;
    for (const term of ['extracted = { otp_codes, links, reply_text }', 'magic_link', 'unsubscribe', 'authentication = { spf, dkim, dmarc, summary }', 'temperror']) {
      assert.ok(full.includes(term), `llms-full.txt mentions ${term}`);
    }
    const doc = (await api(svc.baseUrl, 'GET', '/openapi.json')).json;
    const data = JSON.stringify(doc);
    for (const term of ['otp_codes', 'reply_text', 'magic_link', 'authentication: {spf, dkim, dmarc, summary}']) {
      assert.ok(data.includes(term), `openapi.json describes ${term}`);
    }
  });
});
