// Random SMTP sessions: garbage commands, broken MIME, oversized DATA, long lines, hang-ups. Every
// reply is a well-formed SMTP reply, the listener never dies, and afterwards a proper message is
// still accepted and stored.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { RawSmtp, type Reply } from '../email/smtp-client.js';
import { createAddress, listEvents, STORE, startTestService } from '../helpers.js';

const RUNS = Number(process.env.SMTP_FUZZ_RUNS ?? 150);

describe(`SMTP fuzz (${STORE})`, () => {
  it(`${RUNS} hostile SMTP sessions leave the listener serving`, { timeout: 300_000 }, async () => {
    const svc = await startTestService({ MAX_EMAIL_BYTES: '65536' });
    try {
      const a = await createAddress(svc.baseUrl);
      const domain = a.email.split('@')[1]!;
      const command = fc.oneof(
        fc.constantFrom(
          'EHLO x',
          'HELO x',
          'RSET',
          'NOOP',
          'VRFY a',
          'EXPN b',
          'HELP',
          'STARTTLS',
          'AUTH PLAIN AGFAYg==',
          'BDAT 10 LAST',
          'MAIL FROM:<>',
          'MAIL FROM:<a@b.example> SIZE=99999999',
          `RCPT TO:<${a.email}>`,
          `RCPT TO:<${a.slug}+t@${domain}>`,
          'RCPT TO:<nobody@nowhere>',
          'RCPT TO:<>',
          'MAIL FROM:x',
        ),
        fc.string({ maxLength: 60 }).map((s) => s.replace(/[\r\n]/g, ' ')),
        fc.integer({ min: 1000, max: 20_000 }).map((n) => `NOOP ${'x'.repeat(n)}`),
        fc.constant('DATA'),
      );
      const message = fc.oneof(
        fc.string({ maxLength: 500 }),
        fc.uint8Array({ maxLength: 500 }).map((u) => Buffer.from(u).toString('latin1')),
        fc.constantFrom('Content-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\nbroken', 'Subject: =?utf-8?B?AAAA?=\r\n\r\n.\r\n..'),
        fc.integer({ min: 60_000, max: 80_000 }).map((n) => `Subject: big\r\n\r\n${'y'.repeat(76)}\r\n`.repeat(Math.ceil(n / 78))),
      );
      const session = fc.record({ cmds: fc.array(command, { maxLength: 12 }), msg: message, hangUp: fc.boolean() });

      await fc.assert(
        fc.asyncProperty(session, async ({ cmds, msg, hangUp }) => {
          const s = await RawSmtp.open(svc.smtpPort);
          try {
            const greeting = await s.reply();
            assert.equal(greeting.code, 220);
            for (const c of cmds) {
              if (s.closed) break;
              let r: Reply;
              try {
                r = await s.cmd(c);
              } catch (e) {
                if (!s.closed) throw e; // no reply while connected: the listener hung
                break; // the server closed the session (too many errors, line too long): allowed
              }
              assert.ok(r.code >= 200 && r.code <= 599, `reply to ${c.slice(0, 40)}: ${r.text}`);
              if (c === 'DATA' && r.code === 354) {
                if (hangUp) {
                  s.write(msg.slice(0, 100));
                  break;
                }
                s.write(`${msg.replace(/\r?\n/g, '\r\n').replace(/^\./gm, '..')}\r\n.\r\n`);
                const fin = await s.reply().catch(() => null);
                if (fin) assert.ok(fin.code >= 200 && fin.code <= 599, fin.text);
              }
            }
          } finally {
            s.destroy();
          }
        }),
        { numRuns: RUNS },
      );

      // Still serving: a proper message is accepted and stored.
      const s = await RawSmtp.ready(svc.smtpPort);
      assert.equal((await s.cmd('MAIL FROM:<after@fuzz.example>')).code, 250);
      assert.equal((await s.cmd(`RCPT TO:<${a.email}>`)).code, 250);
      const { final } = await s.data(`Subject: after the fuzz\r\nMessage-ID: <after-fuzz-${Date.now()}@x>\r\n\r\nstill here\r\n`);
      assert.equal(final?.code, 250, final?.text);
      await s.quit();
      let events = (await listEvents(svc.baseUrl, a, { after: 0, limit: 100 })).json.events;
      for (let cursor = 0; events.length === 100; ) {
        cursor = events.at(-1).sequence;
        events = (await listEvents(svc.baseUrl, a, { after: cursor, limit: 100 })).json.events;
      }
      assert.ok(events.some((e: { data: { subject?: string } }) => e.data.subject === 'after the fuzz'));
    } finally {
      await svc.stop();
    }
  });
});
