// /openapi.json is generated from the route schemas; it must be a valid OpenAPI 3.1 document that
// lists every route the app serves. The llms guides carry this deployment's real values.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import { api, createAddress } from '../helpers.js';
import { type InjectedService, startInjectedService } from '../inject.js';
import { OpenApiValidator } from '../openapi-validator.js';

/** "METHOD /path/{param}" of every route in Fastify's printRoutes tree (HEAD only when asked for). */
function servedRoutes(tree: string, opts: { head: boolean }): Set<string> {
  const out = new Set<string>();
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const m = /^([│ ]*)[├└]── (\S+)(?: \(([^)]*)\))?/.exec(line.replace(/\u00a0/g, ' '));
    if (!m) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    stack.push(m[2]!);
    for (const method of (m[3] ?? '').split(', ').filter((x) => x && (opts.head || x !== 'HEAD'))) {
      out.add(`${method} ${stack.join('').replace(/:(\w+)/g, '{$1}')}`);
    }
  }
  return out;
}

describe('published documents', () => {
  let svc: InjectedService;
  before(async () => {
    svc = await startInjectedService({ MAX_EVENTS_PER_ADDRESS: '1234', EMAIL_DOMAIN: 'mail.example.test' });
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

  it('documents exactly the routes the app serves: the same methods on the same paths', async () => {
    const doc = (await api(svc.baseUrl, 'GET', '/openapi.json')).json;
    const documented = new Set<string>();
    const refusals = new Set<string>();
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        const key = `${method.toUpperCase()} ${path}`;
        // Operations documented only to say they are refused (MCP's GET and DELETE) have no route.
        if (Object.keys(op.responses).join() === '405') refusals.add(key);
        else documented.add(key);
      }
    }
    const tree = svc.app.printRoutes({ commonPrefix: false });
    // HEAD: Fastify adds it to every GET route; the ones a route declares itself are documented.
    const served = servedRoutes(tree, { head: false });
    const servedHead = servedRoutes(tree, { head: true });
    for (const key of documented) if (key.startsWith('HEAD ')) assert.ok(servedHead.has(key), `${key} is served`);
    // The capture URL's sub-paths (…/{secret}/*) are one hidden route: OpenAPI has no wildcard path,
    // and the documented capture operations say that any sub-path below them is taken the same way.
    const visible = [...served].filter((k) => !k.endsWith('*'));
    assert.deepEqual([...documented].filter((k) => !k.startsWith('HEAD ')).sort(), visible.sort());
    assert.deepEqual([...refusals].sort(), ['DELETE /api/v1/addresses/{addressId}/mcp', 'GET /api/v1/addresses/{addressId}/mcp']);
    for (const key of refusals) assert.ok(!served.has(key), `${key} is not served`);
  });

  it('is a document a client generator can trust: optional stays optional, ids, named types, media types', async () => {
    const doc = (await api(svc.baseUrl, 'GET', '/openapi.json')).json;
    const list = doc.paths['/api/v1/addresses/{addressId}/events'].get;
    for (const name of ['after', 'limit', 'wait']) {
      assert.equal(list.parameters.find((p: any) => p.name === name)?.required, false, `${name} is optional`);
    }
    assert.equal(doc.paths['/api/v1/addresses'].post.requestBody.required, false, 'the create body may be omitted');
    assert.equal(doc.paths['/api/v1/inbox/{addressId}/{secret}'].post.requestBody.required, true, 'a delivery needs a body');
    for (const p of ['/llms.txt', '/llms-full.txt']) assert.deepEqual(Object.keys(doc.paths[p].get.responses['200'].content), ['text/plain']);
    assert.deepEqual(Object.keys(doc.paths['/openapi.json'].get.responses['200'].content), ['application/json']);
    const ids: string[] = [];
    for (const item of Object.values<any>(doc.paths)) {
      for (const op of Object.values<any>(item)) {
        ids.push(op.operationId);
        assert.ok(op.summary && op.description && op.tags?.length === 1, `${op.operationId}: summary, description and a tag`);
      }
    }
    assert.equal(new Set(ids).size, ids.length, 'operationIds are unique');
    for (const id of ['createAddress', 'getAddress', 'deleteAddress', 'listEvents', 'ackEvent', 'deliverEvent', 'callMcp']) assert.ok(ids.includes(id), id);
    for (const name of ['Address', 'Event', 'EventPage', 'Error', 'CreateAddressResponse', 'EventDeliveryResponse', 'CreateEventBody']) {
      assert.ok(doc.components.schemas[name], `components.schemas.${name}`);
    }
    assert.deepEqual(list.responses['200'].content['application/json'].schema, { $ref: '#/components/schemas/EventPage' });
    assert.equal(doc.components.schemas.EventPage.properties.events.items.$ref, '#/components/schemas/Event');
    assert.equal(doc.info.license.identifier, 'MIT');
    assert.ok(doc.info.contact.url);
    assert.deepEqual(
      doc.tags.map((t: any) => t.name).sort(),
      [...new Set(Object.values<any>(doc.paths).flatMap((i) => Object.values<any>(i).map((o) => o.tags[0])))].sort(),
    );
    for (const t of doc.tags) assert.ok(t.description, `tag ${t.name} has a description`);
    const getAddress = doc.paths['/api/v1/addresses/{addressId}'].get.responses;
    assert.ok(getAddress['401'].headers['WWW-Authenticate'], '401 documents its challenge');
  });

  it("the guides' curl -d bodies are valid requests of the document", async () => {
    const doc = (await api(svc.baseUrl, 'GET', '/openapi.json')).json;
    const v = new OpenApiValidator(doc);
    const full = (await api(svc.baseUrl, 'GET', '/llms-full.txt')).text;
    const short = (await api(svc.baseUrl, 'GET', '/llms.txt')).text;
    const paths: Record<string, string> = {
      [`${svc.baseUrl}/api/v1/addresses`]: '/api/v1/addresses',
      '"$INBOX_URL"': '/api/v1/inbox/addr_x/aa_ingress_x',
      '"$MCP_URL"': '/api/v1/addresses/addr_x/mcp',
      '"$APPROVALS_URL"': '/api/v1/addresses/addr_x/approvals',
      '"$CLAIMS_URL"': '/api/v1/addresses/addr_x/claims',
    };
    let checked = 0;
    for (const text of [full, short]) {
      // curl -s -X POST <url> \ … -d '<json>': the url and the body, across the continuation lines.
      for (const m of text.matchAll(/curl -s -X POST (\S+)((?:[^\n]*\\\n)*?)[^\n]*?-d '([^']*)'/g)) {
        const path = paths[m[1]!];
        assert.ok(path, `a known curl target: ${m[1]}`);
        v.assertValid(v.requestSchema('POST', path), JSON.parse(m[3]!), `curl -d to ${m[1]}`);
        checked++;
      }
    }
    assert.ok(checked >= 3, `found the curl bodies (${checked})`);
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
    assert.ok(
      full.text.includes('/events/stream') && full.text.includes('Last-Event-ID') && full.text.includes('/inspect'),
      'the event stream and the inspector are documented',
    );
  });

  it("the lists of accepted query parameters come from the routes' schemas: the 400s, the OpenAPI and the guide agree", async () => {
    const a = await createAddress(svc.baseUrl);
    const doc = (await api(svc.baseUrl, 'GET', '/openapi.json')).json;
    const full = (await api(svc.baseUrl, 'GET', '/llms-full.txt')).text.replace(/\s+/g, ' ');
    for (const path of ['/api/v1/addresses/{addressId}/events', '/api/v1/addresses/{addressId}/events/stream']) {
      const names = (doc.paths[path].get.parameters as { in: string; name: string }[]).filter((p) => p.in === 'query').map((p) => p.name);
      const r = await api(svc.baseUrl, 'GET', `${path.replace('{addressId}', a.id)}?cursor=2`, { token: a.token });
      assert.equal(r.status, 400, r.text);
      const message = `Unknown query parameter 'cursor': the allowed ones are ${names.join(', ')}.`;
      assert.equal(r.json.error.message, message, path);
      assert.ok(names.includes('consumer') && names.includes('after'), `${path}: ${names.join(', ')}`);
      if (path.endsWith('/events')) assert.ok(full.includes(message), `the guide quotes the live message: ${message}`);
    }
  });

  it('the TypeScript client is named @return-address/client everywhere a user reads', async () => {
    const full = (await api(svc.baseUrl, 'GET', '/llms-full.txt')).text;
    const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
    for (const [name, text] of [
      ['llms-full.txt', full],
      ['README.md', readme],
    ] as const) {
      assert.doesNotMatch(text, /from ['"]return-address['"]/, `${name} imports the client by the service package's name`);
      assert.match(text, /from '@return-address\/client'/, `${name} shows the client's import`);
    }
  });

  it('documents the event stream as text/event-stream with its query and Last-Event-ID header', async () => {
    const doc = (await api(svc.baseUrl, 'GET', '/openapi.json')).json;
    const op = doc.paths['/api/v1/addresses/{addressId}/events/stream'].get;
    assert.ok(op.responses['200'].content['text/event-stream'], 'a text/event-stream response');
    assert.deepEqual(op.security, [{ bearerAuth: [] }]);
    const params = op.parameters.map((p: { in: string; name: string }) => `${p.in}:${p.name}`);
    for (const p of ['path:addressId', 'query:after', 'header:last-event-id']) assert.ok(params.includes(p), `${p} declared`);
    assert.ok(
      ['401', '404', '400'].every((s) => op.responses[s]),
      'its errors',
    );
    assert.ok(doc.paths['/inspect'].get.responses['200'].content['text/html']);
  });

  it('email events document data.extracted and data.authentication in llms-full.txt and the OpenAPI', async () => {
    const full = (await api(svc.baseUrl, 'GET', '/llms-full.txt')).text;
    for (const term of [
      'extracted = { otp_codes, links, reply_text }',
      'magic_link',
      'unsubscribe',
      'authentication = { spf, dkim, dmarc, summary }',
      'temperror',
    ]) {
      assert.ok(full.includes(term), `llms-full.txt mentions ${term}`);
    }
    const doc = (await api(svc.baseUrl, 'GET', '/openapi.json')).json;
    const data = JSON.stringify(doc);
    for (const term of ['otp_codes', 'reply_text', 'magic_link', 'authentication: {spf, dkim, dmarc, summary}']) {
      assert.ok(data.includes(term), `openapi.json describes ${term}`);
    }
  });
});
