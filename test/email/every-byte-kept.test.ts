// Every byte of a mail kept (design.md, "Inbound email"), black-box over real SMTP and HTTP on the
// configured store: the raw message of a mail that parsed is at data.raw.url byte for byte with
// its sha256; every attachment has sha256 and url, whether its bytes also sit inline or not, and
// the url answers with exactly those bytes; a mail to several addresses and an MTA's retry are
// stored once per address; the raw message counts toward MAX_BYTES_PER_ADDRESS.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { parseEmail, UNBOUNDED_EMAIL } from '../../src/email/mime-to-event.js';
import { type Addr, api, createAddress, listEvents, STORE, startTestService, type TestService } from '../helpers.js';
import { LIVENESS_MS, startLivenessProbe } from '../liveness-probe.js';
import { sendRaw } from './smtp-client.js';

const MAX_EVENT_BYTES = 64 * 1024;
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const code = (r: Awaited<ReturnType<typeof sendRaw>>) => r.final?.code ?? r.data?.code ?? r.rcpt.at(-1)?.code;

async function fetchBytes(url: string, a: Addr) {
  const r = await fetch(url, { headers: { authorization: `Bearer ${a.token}` } });
  return { status: r.status, headers: r.headers, bytes: Buffer.from(await r.arrayBuffer()) };
}

/** A multipart message with one attachment per entry, CRLF line ends, as an MTA would hand it over. */
function multipart(to: string[], messageId: string, text: string, files: { name: string; type: string; bytes: Buffer }[]): Buffer {
  const parts = files.map(
    (f) =>
      `--b1\r\nContent-Type: ${f.type}\r\nContent-Disposition: attachment; filename="${f.name}"\r\nContent-Transfer-Encoding: base64\r\n\r\n` +
      `${f.bytes.toString('base64').replace(/.{76}/g, '$&\r\n')}\r\n`,
  );
  return Buffer.from(
    `From: ci@example.org\r\nTo: ${to.join(', ')}\r\nSubject: evidence\r\nMessage-ID: <${messageId}>\r\nMIME-Version: 1.0\r\n` +
      `Content-Type: multipart/mixed; boundary="b1"\r\n\r\n--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${text}\r\n${parts.join('')}--b1--\r\n`,
  );
}

describe(`every byte of a mail kept (${STORE})`, () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ MAX_EVENT_BYTES: String(MAX_EVENT_BYTES) });
  });
  after(() => svc.stop());

  it('a mail that parsed: data.raw.url serves the message byte for byte (dot lines, 8-bit bytes, CRLF) with its sha256', async () => {
    const a = await createAddress(svc.baseUrl);
    const message = Buffer.concat([
      Buffer.from(
        `From: Jürgen <j@example.org>\r\nTo: ${a.email}\r\nSubject: =?utf-8?q?Gr=C3=BC=C3=9Fe?=\r\nMessage-ID: <raw-1@example.org>\r\n` +
          'DKIM-Signature: v=1; a=rsa-sha256; d=example.org; s=sel; h=from:to; bh=AAAA; b=BBBB\r\n' +
          'MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n',
      ),
      Buffer.from('Grüße.\r\n.a line that starts with a dot\r\n..two dots\r\n\ttab and trailing space \r\n'),
    ]);
    const sent = await sendRaw(svc.smtpPort, { from: 'j@example.org', rcpts: [a.email], message });
    assert.equal(code(sent), 250, JSON.stringify(sent));
    const e = (await listEvents(svc.baseUrl, a)).json.events[0];
    assert.equal(e.data.parse_error, null, 'it parsed');
    assert.match(e.data.text, /a line that starts with a dot/);
    assert.deepEqual(e.data.raw, {
      size: message.length,
      sha256: sha256(message),
      content_type: 'message/rfc822',
      url: `${svc.baseUrl}/api/v1/addresses/${a.id}/events/${e.id}/raw`,
    });
    const got = await fetchBytes(e.data.raw.url, a);
    assert.equal(got.status, 200);
    assert.ok(got.bytes.equals(message), `the exact message: ${JSON.stringify(got.bytes.toString('latin1').slice(0, 400))}`);
    assert.equal(got.headers.get('content-type'), 'message/rfc822');
    assert.equal(got.headers.get('content-length'), String(message.length));
    assert.equal(got.headers.get('etag'), `"${sha256(message)}"`);
    assert.equal((await fetchBytes(e.data.raw.url, { ...a, token: 'aa_read_wrong' })).status, 401);
  });

  it('every attachment has sha256 and url: an inline one serves exactly its content_base64, one beside the event its bytes', async () => {
    const a = await createAddress(svc.baseUrl);
    const small = Buffer.from([0, 1, 2, 0xff, 0xfe, 13, 10, 46, 46]);
    const big = Buffer.alloc(100 * 1024);
    for (let i = 0; i < big.length; i++) big[i] = (i * 31) & 0xff;
    const message = multipart([a.email], 'att-1@example.org', 'two files', [
      { name: 'small.bin', type: 'application/x-small', bytes: small },
      { name: 'big.bin', type: 'application/octet-stream', bytes: big },
    ]);
    assert.equal(code(await sendRaw(svc.smtpPort, { from: 'ci@example.org', rcpts: [a.email], message })), 250);
    const e = (await listEvents(svc.baseUrl, a)).json.events[0];
    const [inline, aside] = e.data.attachments;
    assert.equal(inline.content_base64, small.toString('base64'), 'the small one sits inline');
    assert.equal(aside.content_base64, undefined, 'the large one does not fit MAX_EVENT_BYTES');
    for (const [n, att, bytes, type] of [
      [0, inline, small, 'application/x-small'],
      [1, aside, big, 'application/octet-stream'],
    ] as const) {
      assert.equal(att.sha256, sha256(bytes));
      assert.equal(att.url, `${svc.baseUrl}/api/v1/addresses/${a.id}/events/${e.id}/attachments/${n}`);
      const got = await fetchBytes(att.url, a);
      assert.equal(got.status, 200, `attachments/${n}`);
      assert.ok(got.bytes.equals(bytes), `attachments/${n}: the exact bytes`);
      assert.equal(got.headers.get('content-type'), type);
      assert.equal(got.headers.get('content-length'), String(bytes.length));
      assert.equal(got.headers.get('etag'), `"${sha256(bytes)}"`);
    }
    assert.ok((await fetchBytes(e.data.raw.url, a)).bytes.equals(message), 'and the whole message');
    assert.equal((await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events/${e.id}/attachments/2`, { token: a.token })).status, 404);
  });

  it('a mail to several addresses and its retry: one event per address, each with its own urls, stored once; a probe stays live', async () => {
    const addrs = await Promise.all([1, 2, 3].map(() => createAddress(svc.baseUrl)));
    const file = Buffer.alloc(20 * 1024, 7);
    const message = multipart(
      addrs.map((x) => x.email),
      'fan-1@example.org',
      'to three',
      [{ name: 'f.bin', type: 'application/octet-stream', bytes: file }],
    );
    const probe = startLivenessProbe(svc.baseUrl);
    const sends = await Promise.all([1, 2, 3].map(() => sendRaw(svc.smtpPort, { from: 'ci@example.org', rcpts: addrs.map((x) => x.email), message })));
    const live = await probe.stop();
    for (const s of sends) assert.equal(code(s), 250, JSON.stringify(s));
    assert.ok(live.maxMs < LIVENESS_MS && live.failures.length === 0, `healthz answered within ${LIVENESS_MS} ms: ${JSON.stringify(live)}`);
    const urls = new Set<string>();
    for (const x of addrs) {
      const events = (await listEvents(svc.baseUrl, x)).json.events;
      assert.equal(events.length, 1, 'the retries are duplicates');
      const [e] = events;
      assert.ok(e.data.raw.url.includes(`/addresses/${x.id}/events/${e.id}/`));
      urls.add(e.data.raw.url);
      assert.ok((await fetchBytes(e.data.raw.url, x)).bytes.equals(message));
      assert.ok((await fetchBytes(e.data.attachments[0].url, x)).bytes.equals(file));
    }
    assert.equal(urls.size, 3);
  });
});

describe(`a mail's raw message counts toward MAX_BYTES_PER_ADDRESS (${STORE})`, () => {
  const text = Array.from({ length: 1500 }, (_, i) => `line ${i} of a long report, nothing to extract here`).join('\r\n');
  const mail = (to: string, id: string) =>
    Buffer.from(`From: r@example.org\r\nTo: ${to}\r\nSubject: report\r\nMessage-ID: <${id}>\r\nContent-Type: text/plain\r\n\r\n${text}\r\n`);
  let svc: TestService;
  let quota: number;
  let rawSize: number;
  before(async () => {
    // What two events' JSON weighs, plus one raw message: the second mail fits only if its raw is not counted.
    const sample = mail('x@example.org', 'sample@example.org');
    const json = Buffer.byteLength(JSON.stringify((await parseEmail(sample, UNBOUNDED_EMAIL)).data));
    rawSize = sample.length;
    quota = 2 * json + rawSize;
    svc = await startTestService({ MAX_BYTES_PER_ADDRESS: String(quota) });
  });
  after(() => svc.stop());

  it('the second mail is refused (452) while the first holds its JSON and raw; acking the first frees both', async () => {
    const a = await createAddress(svc.baseUrl);
    assert.equal(code(await sendRaw(svc.smtpPort, { from: 'r@example.org', rcpts: [a.email], message: mail(a.email, 'q-1@example.org') })), 250);
    const full = await sendRaw(svc.smtpPort, { from: 'r@example.org', rcpts: [a.email], message: mail(a.email, 'q-2@example.org') });
    assert.equal(code(full), 452, `the raw message (${rawSize} bytes) counts: quota ${quota} = two events' JSON and one raw`);
    const [first] = (await listEvents(svc.baseUrl, a)).json.events;
    assert.equal(first.data.raw.size, mail(a.email, 'q-1@example.org').length);
    assert.equal((await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/events/${first.id}/ack`, { token: a.token })).status, 200);
    assert.equal(code(await sendRaw(svc.smtpPort, { from: 'r@example.org', rcpts: [a.email], message: mail(a.email, 'q-2@example.org') })), 250);
    assert.equal((await api(svc.baseUrl, 'GET', first.data.raw.url, { token: a.token })).status, 404, 'its raw message went with it');
  });
});
