// The MIME -> event step on arbitrary input: it never throws, never loses the raw size, and always
// yields an event that survives JSON (what the store and every reader will do with it).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { shownDedupeKey } from '../../src/domain/dedupe-key.js';
import { mimeToEvent } from '../../src/email/mime-to-event.js';

const envelope = { mailFrom: 'a@b.example', rcptTo: 'x@y.example', remoteIp: '127.0.0.1', tag: undefined };

const header = fc
  .tuple(
    fc.constantFrom(
      'From',
      'To',
      'Cc',
      'Subject',
      'Message-ID',
      'Date',
      'References',
      'In-Reply-To',
      'Content-Type',
      'Content-Transfer-Encoding',
      'X-\u00ff',
      '',
      ' ',
    ),
    fc.oneof(
      fc.string({ maxLength: 80 }),
      fc.constantFrom(
        'multipart/mixed; boundary=b',
        'multipart/alternative; boundary="',
        'base64',
        'quoted-printable',
        '=?utf-8?B?////?=',
        '=?bogus?Q?x?=',
        '<a@b>',
        'not a date',
        '"Name" <n@x>, , <>',
        'text/html; charset=ebcdic',
      ),
    ),
  )
  .map(([k, v]) => `${k}: ${v}`);
const bodyPart = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.constantFrom('--b\r\nContent-Type: text/plain\r\n\r\nhi\r\n--b--', '--b\r\n\r\n', '=ZZ=\r\n', '\u0000\u0001'),
);
const message = fc.oneof(
  fc
    .tuple(fc.array(header, { maxLength: 12 }), fc.array(bodyPart, { maxLength: 6 }))
    .map(([h, b]) => Buffer.from(`${h.join('\r\n')}\r\n\r\n${b.join('\r\n')}`, 'utf8')),
  fc.uint8Array({ maxLength: 2000 }).map((u) => Buffer.from(u)),
);

describe('mimeToEvent on arbitrary bytes', () => {
  it('always yields a well-formed email event', async () => {
    await fc.assert(
      fc.asyncProperty(message, async (raw) => {
        const ev = await mimeToEvent(raw, envelope);
        assert.equal(ev.type, 'email.received');
        assert.equal(ev.source, 'email');
        const data = JSON.parse(JSON.stringify(ev.data)) as Record<string, unknown>;
        assert.equal(data.raw_size, raw.length);
        for (const k of ['from', 'to', 'cc', 'subject', 'text', 'html', 'message_id', 'in_reply_to', 'references', 'date', 'headers', 'attachments']) {
          assert.ok(k in data, `data.${k} is always present`);
        }
        assert.ok(Array.isArray(data.to) && Array.isArray(data.attachments));
        if (ev.dedupe_key !== undefined) assert.ok(shownDedupeKey(ev.dedupe_key).length >= 1 && shownDedupeKey(ev.dedupe_key).length <= 255);
        for (const v of Object.values(ev.metadata ?? {})) assert.equal(typeof v, 'string');
      }),
      { numRuns: Number(process.env.FUZZ_RUNS ?? 300) },
    );
  });
});
