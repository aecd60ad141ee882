// Bounded events (design.md, "Bounded work"): an event's stored JSON is at most MAX_EVENT_BYTES; a
// body or attachment that does not fit is stored once, as bytes, beside the event and served by
// GET …/events/{id}/raw and …/attachments/{n} (exact bytes, content type, Content-Length, ETag);
// the bytes count toward MAX_BYTES_PER_ADDRESS and go with their event. A liveness probe runs
// beside every large request.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import { SQLITE_FILE } from '../../src/storage/open-store.js';
import { sendRaw } from '../email/smtp-client.js';
import { type Addr, api, createAddress, listEvents, STORE, startTestService, type TestService } from '../helpers.js';
import { LIVENESS_MS, startLivenessProbe } from '../liveness-probe.js';

const MAX_EVENT_BYTES = 64 * 1024;
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function capture(svc: TestService, a: Addr, body: Buffer | string, contentType: string, path = '') {
  const r = await fetch(`${svc.baseUrl}/api/v1/hooks/${a.id}/${a.secret}${path}`, { method: 'POST', headers: { 'content-type': contentType }, body });
  return { status: r.status, json: (await r.json()) as any };
}

async function blobRows(svc: TestService): Promise<number> {
  if (STORE === 'sqlite') {
    const db = new Database(join(svc.storage.dataDir, SQLITE_FILE), { readonly: true });
    try {
      return (db.prepare('SELECT count(*) AS n FROM event_blobs').get() as { n: number }).n;
    } finally {
      db.close();
    }
  }
  const c = new pg.Client({ connectionString: svc.storage.databaseUrl });
  await c.connect();
  try {
    return Number((await c.query('SELECT count(*) AS n FROM event_blobs')).rows[0].n);
  } finally {
    await c.end();
  }
}

describe(`bounded events: bytes beside the event (${STORE})`, () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ MAX_EVENT_BYTES: String(MAX_EVENT_BYTES), MAX_BYTES_PER_ADDRESS: String(3 * 1024 * 1024) });
  });
  after(() => svc.stop());

  it('a 1 MiB text/plain body of control bytes is stored once beside a small event, served exactly by …/raw', async () => {
    const a = await createAddress(svc.baseUrl);
    const body = Buffer.alloc(1024 * 1024, 0x01);
    const probe = startLivenessProbe(svc.baseUrl);
    const r = await capture(svc, a, body, 'text/plain');
    const live = await probe.stop();
    assert.equal(r.status, 202, JSON.stringify(r.json));
    assert.ok(live.maxMs < LIVENESS_MS && live.failures.length === 0, `healthz answered within ${LIVENESS_MS} ms: ${JSON.stringify(live)}`);

    const page = await listEvents(svc.baseUrl, a);
    assert.equal(page.status, 200);
    assert.ok(page.text.length < MAX_EVENT_BYTES, `the page holds a bounded event: ${page.text.length} bytes`);
    const e = page.json.events[0];
    assert.equal(e.data.body, null, 'a body over MAX_EVENT_BYTES is not inline');
    assert.equal(e.data.raw.size, body.length);
    assert.equal(e.data.raw.sha256, sha256(body));
    assert.equal('content' in e.data.raw, false, 'raw.content is absent when the bytes are beside the event');
    assert.equal(e.data.raw.url, `${svc.baseUrl}/api/v1/addresses/${a.id}/events/${e.id}/raw`);

    const got = await fetch(e.data.raw.url, { headers: { authorization: `Bearer ${a.token}` } });
    assert.equal(got.status, 200);
    assert.equal(got.headers.get('content-type'), 'text/plain');
    assert.equal(got.headers.get('content-length'), String(body.length));
    assert.equal(got.headers.get('etag'), `"${sha256(body)}"`);
    assert.ok(Buffer.from(await got.arrayBuffer()).equals(body), 'the exact bytes');

    const again = await fetch(e.data.raw.url, { headers: { authorization: `Bearer ${a.token}`, 'if-none-match': `"${sha256(body)}"` } });
    assert.equal(again.status, 304);
  });

  it('the bytes route is bearer-protected and per address; an inline event has no raw bytes (404)', async () => {
    const a = await createAddress(svc.baseUrl);
    const b = await createAddress(svc.baseUrl);
    assert.equal((await capture(svc, a, Buffer.alloc(200 * 1024, 0x41), 'application/octet-stream')).status, 202);
    assert.equal((await capture(svc, a, '{"small":1}', 'application/json')).status, 202);
    const [big, small] = (await listEvents(svc.baseUrl, a)).json.events;
    assert.equal(small.data.raw.content, '{"small":1}', 'a small body stays inline as today');
    const url = big.data.raw.url as string;
    assert.equal((await api(svc.baseUrl, 'GET', url)).status, 401);
    assert.equal((await api(svc.baseUrl, 'GET', url, { token: b.token })).status, 401);
    assert.equal((await api(svc.baseUrl, 'GET', url.replace(a.id, b.id), { token: b.token })).status, 404, 'another address cannot name it');
    assert.equal((await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events/${small.id}/raw`, { token: a.token })).status, 404);
    assert.equal((await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events/evt_nope/raw`, { token: a.token })).status, 404);
  });

  it('a large multipart file goes beside the event as attachments/{n}; a small one stays inline and is at its url too', async () => {
    const a = await createAddress(svc.baseUrl);
    const file = Buffer.alloc(300 * 1024);
    for (let i = 0; i < file.length; i++) file[i] = (i * 7) & 0xff;
    const form = new FormData();
    form.append('note', 'hello');
    form.append('small', new Blob([Buffer.from('tiny')], { type: 'text/plain' }), 'small.txt');
    form.append('big', new Blob([file], { type: 'application/zip' }), 'big.zip');
    const r = await fetch(`${svc.baseUrl}/api/v1/hooks/${a.id}/${a.secret}`, { method: 'POST', body: form });
    assert.equal(r.status, 202, await r.text());
    const e = (await listEvents(svc.baseUrl, a)).json.events[0];
    assert.deepEqual(e.data.body, { note: 'hello' });
    const [small, big] = e.data.attachments;
    assert.equal(Buffer.from(small.content_base64, 'base64').toString(), 'tiny');
    assert.equal(big.content_base64, undefined);
    assert.equal(big.sha256, sha256(file));
    assert.equal(big.url, `${svc.baseUrl}/api/v1/addresses/${a.id}/events/${e.id}/attachments/1`);
    const got = await fetch(big.url, { headers: { authorization: `Bearer ${a.token}` } });
    assert.equal(got.status, 200);
    assert.equal(got.headers.get('content-type'), 'application/zip');
    assert.ok(Buffer.from(await got.arrayBuffer()).equals(file));
    assert.equal(small.url, `${svc.baseUrl}/api/v1/addresses/${a.id}/events/${e.id}/attachments/0`, 'an inline file has a url too');
    assert.equal(small.sha256, sha256(Buffer.from('tiny')));
    const tiny = await fetch(small.url, { headers: { authorization: `Bearer ${a.token}` } });
    assert.equal(tiny.status, 200);
    assert.equal(tiny.headers.get('content-type'), 'text/plain');
    assert.equal(await tiny.text(), 'tiny');
  });

  it('JSON with a number beyond a 64-bit float (1e999) is stored as broken JSON: body null, bytes in raw', async () => {
    const a = await createAddress(svc.baseUrl);
    assert.equal((await capture(svc, a, '{"n":1e999,"ok":true}', 'application/json')).status, 202);
    const page = await listEvents(svc.baseUrl, a);
    const e = page.json.events[0];
    assert.equal(e.data.body, null);
    assert.equal(e.data.raw.content, '{"n":1e999,"ok":true}');
    assert.doesNotMatch(page.text, /"body":\{"n":1e999/);
  });

  it('blob bytes count toward MAX_BYTES_PER_ADDRESS, are pruned with their acknowledged event, and go with the address', async () => {
    const a = await createAddress(svc.baseUrl);
    const before = await blobRows(svc);
    const mib = (fill: number) => Buffer.alloc(1024 * 1024, fill);
    assert.equal((await capture(svc, a, mib(1), 'application/octet-stream')).status, 202);
    assert.equal((await capture(svc, a, mib(2), 'application/octet-stream')).status, 202);
    const full = await capture(svc, a, mib(3), 'application/octet-stream');
    assert.equal(full.status, 429, 'three MiB of blobs do not fit a 3 MiB quota beside the events');
    assert.equal(full.json.error.code, 'queue_full');
    const [first] = (await listEvents(svc.baseUrl, a)).json.events;
    assert.equal((await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/events/${first.id}/ack`, { token: a.token })).status, 200);
    assert.equal((await capture(svc, a, mib(3), 'application/octet-stream')).status, 202, 'the acknowledged event is pruned to make room');
    assert.equal((await api(svc.baseUrl, 'GET', first.data.raw.url, { token: a.token })).status, 404, 'its bytes went with it');
    assert.equal(await blobRows(svc), before + 2);
    assert.equal((await api(svc.baseUrl, 'DELETE', `/api/v1/addresses/${a.id}`, { token: a.token })).status, 204);
    assert.equal(await blobRows(svc), before, 'deleting the address deletes its bytes');
  });

  it('parallel captures with and without blobs: gapless sequences, every blob with its own event', { timeout: 60_000 }, async () => {
    const a = await createAddress(svc.baseUrl);
    const bodies = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? Buffer.alloc(100 * 1024, i) : Buffer.from(JSON.stringify({ i }))));
    const results = await Promise.all(bodies.map((b, i) => capture(svc, a, b, i % 2 === 0 ? 'application/octet-stream' : 'application/json')));
    for (const r of results) assert.equal(r.status, 202, JSON.stringify(r.json));
    const events: any[] = [];
    for (let after = 0; ; ) {
      const page = await listEvents(svc.baseUrl, a, { after, limit: 100 });
      events.push(...page.json.events);
      after = page.json.next_cursor;
      if (!page.json.has_more) break;
    }
    assert.deepEqual(
      events.map((e) => e.sequence),
      Array.from({ length: 40 }, (_, i) => i + 1),
      'gapless, in order',
    );
    const withBlob = events.filter((e) => e.data.raw.url !== undefined);
    assert.equal(withBlob.length, 20);
    for (const e of withBlob) {
      const got = Buffer.from(await (await fetch(e.data.raw.url, { headers: { authorization: `Bearer ${a.token}` } })).arrayBuffer());
      assert.equal(sha256(got), e.data.raw.sha256, `event ${e.sequence} has its own bytes`);
    }
  });

  it('mail: a large attachment is stored beside the event; unparseable MIME keeps the message behind raw.url', async () => {
    const a = await createAddress(svc.baseUrl);
    const payload = Buffer.alloc(200 * 1024);
    for (let i = 0; i < payload.length; i++) payload[i] = (i * 13) & 0xff;
    const b64 = payload.toString('base64').replace(/.{76}/g, '$&\r\n');
    const message =
      'From: ci@example.org\r\nTo: ' +
      a.email +
      '\r\nSubject: artifact\r\nMessage-ID: <artifact-1@example.org>\r\nMIME-Version: 1.0\r\n' +
      'Content-Type: multipart/mixed; boundary="b1"\r\n\r\n--b1\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n' +
      '--b1\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename="a.bin"\r\nContent-Transfer-Encoding: base64\r\n\r\n' +
      b64 +
      '\r\n--b1--\r\n';
    const sent = await sendRaw(svc.smtpPort, { from: 'ci@example.org', rcpts: [a.email], message });
    assert.equal(sent.final?.code ?? sent.data?.code, 250, JSON.stringify(sent));
    const e = (await listEvents(svc.baseUrl, a)).json.events[0];
    assert.equal(e.data.text, 'see attached\n');
    const att = e.data.attachments[0];
    assert.equal(att.content_base64, undefined);
    assert.equal(att.size, payload.length);
    assert.equal(att.url, `${svc.baseUrl}/api/v1/addresses/${a.id}/events/${e.id}/attachments/0`);
    const got = await fetch(att.url, { headers: { authorization: `Bearer ${a.token}` } });
    const gotBytes = Buffer.from(await got.arrayBuffer());
    assert.equal(got.status, 200);
    assert.equal(sha256(gotBytes), att.sha256);
    assert.ok(gotBytes.equals(payload), `the attachment's bytes: ${gotBytes.length} of ${payload.length}`);
    assert.equal(e.data.raw.size, Buffer.byteLength(message), 'a mail that parsed keeps its raw message too');

    const broken = `From: x@example.org\r\nTo: ${a.email}\r\nContent-Type: multipart/mixed; boundary="never"\r\n\r\n${'body line\r\n'.repeat(10)}`;
    const s2 = await sendRaw(svc.smtpPort, { from: 'x@example.org', rcpts: [a.email], message: broken });
    assert.equal(s2.final?.code ?? s2.data?.code, 250);
    const e2 = (await listEvents(svc.baseUrl, a, { after: e.sequence })).json.events[0];
    assert.match(e2.data.parse_error, /no MIME part/);
    assert.equal(e2.data.raw.content_type, 'message/rfc822');
    const raw = await fetch(e2.data.raw.url, { headers: { authorization: `Bearer ${a.token}` } });
    assert.equal(raw.status, 200);
    const bytes = Buffer.from(await raw.arrayBuffer());
    assert.equal(bytes.length, e2.data.raw_size);
    assert.equal(e2.data.raw.sha256, sha256(bytes));
    assert.match(bytes.toString(), /boundary="never"/);
  });
});

describe(`an event that cannot be bounded is refused (${STORE})`, () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ MAX_EVENT_BYTES: '4096' });
  });
  after(() => svc.stop());

  it('a request whose headers and query alone exceed MAX_EVENT_BYTES is 413 naming the limit, and nothing is stored', async () => {
    const a = await createAddress(svc.baseUrl);
    const query = Array.from({ length: 600 }, (_, i) => `k${i}=${'v'.repeat(8)}`).join('&');
    const probe = startLivenessProbe(svc.baseUrl);
    const r = await fetch(`${svc.baseUrl}/api/v1/hooks/${a.id}/${a.secret}?${query}`, { method: 'POST', body: 'x' });
    const live = await probe.stop();
    const j = (await r.json()) as any;
    assert.equal(r.status, 413);
    assert.equal(j.error.code, 'payload_too_large');
    assert.match(j.error.message, /MAX_EVENT_BYTES = 4096/);
    assert.equal((await listEvents(svc.baseUrl, a)).json.events.length, 0);
    assert.ok(live.maxMs < LIVENESS_MS && live.failures.length === 0, JSON.stringify(live));
  });

  it('POST /api/v1/inbox refuses an event over MAX_EVENT_BYTES with 413 naming it', async () => {
    const a = await createAddress(svc.baseUrl);
    const r = await api(svc.baseUrl, 'POST', a.inboxUrl, { json: { data: { pad: 'x'.repeat(5000) } } });
    assert.equal(r.status, 413);
    assert.match(r.json.error.message, /MAX_EVENT_BYTES/);
  });
});
