// The pure MIME -> event step, on .eml fixtures and on generated pathological messages.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { emailDedupeKey } from '../../src/domain/dedupe-key.js';
import { dedupeKeyFor, mimeToEvent, parseEmailMessage, type SmtpEnvelope } from '../../src/email/mime-to-event.js';

// Fixtures live in the source tree: dist/test/email/*.js -> test/fixtures/email/.
const FIXTURES = fileURLToPath(new URL('../../../test/fixtures/email/', import.meta.url));
const fixture = (name: string) => readFileSync(FIXTURES + name);

const envelope: SmtpEnvelope = { mailFrom: 'bounce@example.org', rcptTo: 'abcdefghijkl@mail.example.net', remoteIp: '192.0.2.1' };

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** The event must survive a JSON round trip unchanged: it is stored as JSON text. */
function assertJsonSafe(value: unknown): void {
  assert.deepEqual(JSON.parse(JSON.stringify(value)), value);
}

describe('mimeToEvent', () => {
  it('turns a multipart message (text + html + two attachments) into the documented event', async () => {
    const raw = fixture('multipart-attachment.eml');
    const ev = await mimeToEvent(raw, envelope);
    assertJsonSafe(ev);
    assert.equal(ev.type, 'email.received');
    assert.equal(ev.source, 'email');
    assert.equal(ev.dedupe_key, emailDedupeKey('build-42.7f3a@ci.example.org'));
    assert.deepEqual(ev.metadata, { smtp_mail_from: 'bounce@example.org', smtp_rcpt_to: 'abcdefghijkl@mail.example.net', remote_ip: '192.0.2.1' });
    const { attachments, headers, ...rest } = ev.data;
    assert.deepEqual(rest, {
      from: { name: 'Alice Example', address: 'alice@example.org' },
      to: [
        { name: 'Agent', address: 'abcdefghijkl@mail.example.net' },
        { name: null, address: 'bob@example.org' },
      ],
      // the group "Reviewers:" is flattened into its members
      cc: [
        { name: null, address: 'carol@example.org' },
        { name: 'Dave, D.', address: 'dave@example.org' },
      ],
      subject: 'Build 42 finished ✓',
      text: 'Build 42 passed. Grüße\n',
      html: '<p>Build <b>42</b> passed.</p>\n',
      message_id: 'build-42.7f3a@ci.example.org',
      in_reply_to: 'build-41.1111@ci.example.org',
      references: ['root.0000@ci.example.org', 'build-41.1111@ci.example.org'],
      date: '2024-10-01T10:00:00.000Z',
      raw_size: raw.byteLength,
      parse_error: null,
      raw: { size: raw.byteLength, sha256: sha256(raw), content_type: 'message/rfc822', url: '' },
      extracted: { otp_codes: [], links: [], reply_text: 'Build 42 passed. Grüße' },
      authentication: null,
    });
    assert.equal(headers['x-ci-job'], '42');
    assert.equal(headers.references, '<root.0000@ci.example.org> <build-41.1111@ci.example.org>', 'folded header is unfolded');
    assert.equal(headers.subject, '=?UTF-8?B?QnVpbGQgNDIgZmluaXNoZWQg4pyT?=', 'headers keep the undecoded value');
    assert.deepEqual(
      headers.received?.split('\n').map((v) => v.slice(0, 20)),
      ['from mx.example.org ', 'from laptop (laptop '],
      'repeated headers are joined with \\n in message order',
    );

    assert.equal(attachments.length, 2);
    const [bin, csv] = attachments;
    const expected = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), Buffer.from(Array.from({ length: 256 }, (_, i) => i))]);
    assert.deepEqual(
      { ...bin, content_base64: undefined },
      { filename: 'report.bin', content_type: 'application/octet-stream', size: 512, content_base64: undefined, sha256: sha256(expected), url: '' },
      'every attachment carries its sha256, inline or not (the url is filled in per recipient)',
    );
    assert.ok(Buffer.from(bin!.content_base64!, 'base64').equals(expected), 'binary attachment bytes survive exactly');
    assert.equal(csv!.filename, 'résumé.csv', 'RFC 2231 file name is decoded');
    assert.equal(csv!.content_type, 'text/csv');
    // A text part without a transfer encoding comes with the parser's LF line ends.
    assert.equal(Buffer.from(csv!.content_base64!, 'base64').toString('utf8'), 'a,b\n1,2\n');
    assert.equal(csv!.size, 8);
  });

  it('keeps a plain-text message, bare Message-ID, folded and repeated headers', async () => {
    const ev = await mimeToEvent(fixture('plain-text.eml'), { ...envelope, tag: 'build42' });
    assert.equal(ev.data.text, 'line one\nline two\n');
    assert.equal(ev.data.html, null);
    assert.deepEqual(ev.data.attachments, []);
    assert.deepEqual(ev.data.cc, []);
    assert.equal(ev.data.message_id, 'plain-1@example.org');
    assert.equal(ev.dedupe_key, emailDedupeKey('plain-1@example.org'));
    assert.equal(ev.data.date, '2024-10-02T12:30:00.000Z', 'the date is normalised to UTC ISO 8601');
    assert.equal(ev.data.headers['x-folded'], 'first part\tsecond part');
    assert.equal(ev.data.headers['x-repeated'], 'one\ntwo');
    assert.equal(ev.metadata.tag, 'build42');
  });

  it('turns malformed MIME into an event with what could be read, the raw size and a parse_error', async () => {
    const raw = fixture('malformed.eml');
    const ev = await mimeToEvent(raw, envelope);
    assertJsonSafe(ev);
    assert.equal(ev.type, 'email.received');
    assert.equal(ev.data.raw_size, raw.byteLength);
    assert.match(ev.data.parse_error ?? '', /no MIME part/);
    assert.ok(ev.data.text?.startsWith('this preamble never reaches a boundary\n--wrong-boundary\n'), `text: ${ev.data.text}`);
    assert.equal(ev.data.subject, '=?UTF-8?B?!!!notbase64?=', 'an encoded word that does not decode stays as sent');
    assert.equal(ev.data.date, null, 'an unparseable Date gives null…');
    assert.equal(ev.data.headers.date, 'not a date', '…and stays readable in headers');
    assert.equal(ev.dedupe_key, emailDedupeKey('malformed-1@example.org'));
    assert.deepEqual(ev.data.to, [{ name: null, address: 'abcdefghijkl@mail.example.net' }]);
  });

  it('decodes 8-bit headers and encoded words in odd charsets', async () => {
    const ev = await mimeToEvent(fixture('eight-bit-headers.eml'), envelope);
    assert.deepEqual(ev.data.from, { name: 'Jürgen Müller', address: 'juergen@example.de' }, 'raw UTF-8 display name');
    assert.deepEqual(ev.data.to, [{ name: 'Renée', address: 'renee@example.fr' }], 'ISO-8859-1 Q-encoded name');
    assert.deepEqual(ev.data.cc, [{ name: 'Привет', address: 'privet@example.ru' }], 'KOI8-R B-encoded name');
    assert.equal(ev.data.subject, 'Тест / Grüße', 'windows-1251 encoded word next to raw UTF-8');
    assert.equal(ev.data.headers['x-latin1-raw'], 'café', 'a raw Latin-1 header byte is read as windows-1252, not lost');
    assert.equal(ev.data.text, 'Schöne Grüße\n', 'an 8bit ISO-8859-1 body is decoded by its charset');
  });

  it('without a Message-ID there is no dedupe key; absent fields are null or []', async () => {
    const ev = await mimeToEvent(fixture('no-message-id.eml'), envelope);
    assert.equal('dedupe_key' in ev, false);
    assert.deepEqual(
      { ...ev.data, headers: undefined, raw_size: undefined, raw: undefined },
      {
        from: null,
        to: [],
        cc: [],
        subject: '',
        text: null,
        html: '<p>only html</p>\n',
        message_id: null,
        in_reply_to: null,
        references: [],
        date: null,
        headers: undefined,
        attachments: [],
        raw_size: undefined,
        parse_error: null,
        raw: undefined,
        extracted: { otp_codes: [], links: [], reply_text: 'only html' },
        authentication: null,
      },
    );
    assert.equal(ev.metadata.tag, undefined);
  });

  it('an empty message still gives a complete, all-empty data object', async () => {
    const ev = await mimeToEvent(new Uint8Array(0), { mailFrom: '', rcptTo: 'x@y', remoteIp: '::1' });
    assert.deepEqual(ev.data, {
      from: null,
      to: [],
      cc: [],
      subject: null,
      text: null,
      html: null,
      message_id: null,
      in_reply_to: null,
      references: [],
      date: null,
      headers: {},
      attachments: [],
      raw_size: 0,
      parse_error: null,
      raw: { size: 0, sha256: sha256(Buffer.alloc(0)), content_type: 'message/rfc822', url: '' },
      extracted: { otp_codes: [], links: [], reply_text: null },
      authentication: null,
    });
    assert.equal(ev.metadata.smtp_mail_from, '', 'the null sender <> is the empty string');
  });

  it('falls back to a header split when the parser gives up (nesting too deep)', async () => {
    const nested = Array.from({ length: 400 }, () => '--b\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n').join('');
    const raw = Buffer.from(`Subject: deep\r\nMessage-ID: <deep@x>\r\nFrom: a@example.org\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n${nested}`);
    const ev = await mimeToEvent(raw, envelope);
    assertJsonSafe(ev);
    assert.match(ev.data.parse_error ?? '', /MIME structure could not be decoded: .*nesting/i);
    assert.equal(ev.data.subject, 'deep');
    assert.equal(ev.dedupe_key, emailDedupeKey('deep@x'));
    assert.deepEqual(ev.data.from, { name: null, address: 'a@example.org' });
    assert.equal(ev.data.raw_size, raw.byteLength);
    assert.ok(ev.data.text?.startsWith('--b\nContent-Type: multipart/mixed'), 'the undecoded body is kept as text');
  });

  it('falls back when the headers exceed the parser limit, keeping them', async () => {
    const big = 'a'.repeat(3 * 1024 * 1024);
    const raw = Buffer.from(`Subject: big\r\nX-Big: ${big}\r\n\r\nbody\r\n`);
    const ev = await mimeToEvent(raw, envelope);
    assert.match(ev.data.parse_error ?? '', /header size/i);
    assert.equal(ev.data.headers['x-big']?.length, big.length);
    assert.equal(ev.data.subject, 'big');
    assert.equal(ev.data.text, 'body\n');
  });

  it('a header named __proto__ is an ordinary key', async () => {
    const ev = await mimeToEvent(Buffer.from('__proto__: polluted\r\nSubject: x\r\n\r\nbody\r\n'), envelope);
    assert.equal(Object.getPrototypeOf(ev.data.headers), Object.prototype);
    assert.equal(Object.getOwnPropertyDescriptor(ev.data.headers, '__proto__')?.value, 'polluted');
    assert.match(JSON.stringify(ev.data.headers), /"__proto__":"polluted"/);
  });

  it('is deterministic and leaves its input alone', async () => {
    const raw = fixture('eight-bit-headers.eml');
    const copy = Buffer.from(raw);
    const a = await mimeToEvent(raw, envelope);
    const b = await mimeToEvent(raw, envelope);
    assert.deepEqual(a, b);
    assert.ok(raw.equals(copy), 'the raw bytes are not modified');
  });
});

describe('dedupeKeyFor', () => {
  it('uses the Message-ID as it is when the queue can take it as a key', () => {
    assert.equal(dedupeKeyFor('a@b'), 'a@b');
    assert.equal(dedupeKeyFor('x'.repeat(255)), 'x'.repeat(255));
  });

  it('hashes ids that are too long or carry control characters, stably', async () => {
    const long = `${'x'.repeat(300)}@example.org`;
    const hash = `sha256:${createHash('sha256').update(long).digest('hex')}`;
    assert.equal(dedupeKeyFor(long), hash);
    assert.match(dedupeKeyFor('a\u0000b@c'), /^sha256:[0-9a-f]{64}$/);
    const ev = await mimeToEvent(Buffer.from(`Message-ID: <${long}>\r\n\r\nx\r\n`), envelope);
    assert.equal(ev.data.message_id, long, 'data keeps the full id');
    assert.equal(ev.dedupe_key, emailDedupeKey(hash));
  });

  it('parseEmailMessage and mimeToEvent agree', async () => {
    const raw = fixture('plain-text.eml');
    assert.deepEqual((await mimeToEvent(raw, envelope)).data, await parseEmailMessage(raw));
  });
});
