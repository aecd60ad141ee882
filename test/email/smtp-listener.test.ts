// Real SMTP dialogues over sockets against the whole service (HTTP + SMTP + store).
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import nodemailer from 'nodemailer';
import { parseRecipient } from '../../src/email/smtp-listener.js';
import { type Addr, api, createAddress, deliver, listEvents, sleep, startTestService, type TestService } from '../helpers.js';
import { RawSmtp, sendRaw, simpleMessage } from './smtp-client.js';

const DOMAIN = 'mail.example.test';

async function events(svc: TestService, a: Addr): Promise<any[]> {
  const res = await listEvents(svc.baseUrl, a, { limit: 100 });
  assert.equal(res.status, 200, res.text);
  return res.json.events;
}

describe('parseRecipient', () => {
  it('accepts <slug>@domain and <slug>+<tag>@domain, domain and slug case-insensitively', () => {
    assert.deepEqual(parseRecipient('abcdefghijkl@mail.example.test', DOMAIN), { slug: 'abcdefghijkl', tag: undefined });
    assert.deepEqual(parseRecipient('ABCDEFGHIJKL+Build-42@MAIL.Example.TEST', DOMAIN), { slug: 'abcdefghijkl', tag: 'Build-42' });
    assert.deepEqual(parseRecipient('abcdefghijkl+@mail.example.test.', DOMAIN), { slug: 'abcdefghijkl', tag: undefined });
  });

  it('refuses other domains, non-slugs and junk', () => {
    for (const rcpt of [
      'abcdefghijkl@other.test',
      'abcdefghijkl@sub.mail.example.test',
      'short@mail.example.test',
      '1bcdefghijkl@mail.example.test',
      '@mail.example.test',
      'abcdefghijkl',
      'abc"defghijkl@mail.example.test',
    ]) {
      assert.equal(parseRecipient(rcpt, DOMAIN), null, rcpt);
    }
  });
});

describe('SMTP listener', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ EMAIL_DOMAIN: DOMAIN });
  });
  after(async () => {
    await svc.stop();
  });

  it('nodemailer: a multipart message with an attachment becomes one event, stored before the 250', async () => {
    const a = await createAddress(svc.baseUrl);
    assert.equal(a.email, `${a.slug}@${DOMAIN}`);
    const attachment = randomBytes(3000);
    const transport = nodemailer.createTransport({ host: '127.0.0.1', port: svc.smtpPort, secure: false, ignoreTLS: true });
    const info = await transport.sendMail({
      envelope: { from: 'bounces@example.org', to: [a.email] },
      from: '"Build Bot" <bot@example.org>',
      to: `Agent <${a.email}>`,
      cc: 'Carol <carol@example.org>',
      subject: 'Build 42 ✓',
      text: 'It passed.\n.leading dot',
      html: '<p>It <b>passed</b>.</p>',
      messageId: '<build-42@ci.example.org>',
      inReplyTo: '<build-41@ci.example.org>',
      references: ['<build-40@ci.example.org>', '<build-41@ci.example.org>'],
      headers: { 'X-Job': 'nightly' },
      attachments: [{ filename: 'artifact.bin', content: attachment, contentType: 'application/octet-stream' }],
    });
    transport.close();
    assert.match(info.response, /^250 /);
    // No waiting: a 250 means the event is already committed.
    const [ev, ...rest] = await events(svc, a);
    assert.equal(rest.length, 0);
    assert.match(info.response, new RegExp(ev.id), 'the 250 names the stored event');
    assert.equal(ev.sequence, 1);
    assert.equal(ev.type, 'email.received');
    assert.equal(ev.source, 'email');
    assert.equal(ev.dedupe_key, 'build-42@ci.example.org');
    const d = ev.data;
    assert.deepEqual(d.from, { name: 'Build Bot', address: 'bot@example.org' });
    assert.deepEqual(d.to, [{ name: 'Agent', address: a.email }]);
    assert.deepEqual(d.cc, [{ name: 'Carol', address: 'carol@example.org' }]);
    assert.equal(d.subject, 'Build 42 ✓');
    assert.equal(d.text.replace(/\n$/, ''), 'It passed.\n.leading dot', 'dot-stuffing undone');
    assert.equal(d.html.trim(), '<p>It <b>passed</b>.</p>');
    assert.equal(d.message_id, 'build-42@ci.example.org');
    assert.equal(d.in_reply_to, 'build-41@ci.example.org');
    assert.deepEqual(d.references, ['build-40@ci.example.org', 'build-41@ci.example.org']);
    assert.equal(typeof d.date, 'string');
    assert.ok(!Number.isNaN(Date.parse(d.date)));
    assert.equal(d.headers['x-job'], 'nightly');
    assert.equal(d.parse_error, null);
    assert.ok(d.raw_size > attachment.length, `raw_size ${d.raw_size}`);
    assert.equal(d.attachments.length, 1);
    assert.equal(d.attachments[0].filename, 'artifact.bin');
    assert.equal(d.attachments[0].content_type, 'application/octet-stream');
    assert.equal(d.attachments[0].size, attachment.length);
    assert.ok(Buffer.from(d.attachments[0].content_base64, 'base64').equals(attachment));
    assert.deepEqual(ev.metadata, { smtp_mail_from: 'bounces@example.org', smtp_rcpt_to: a.email, remote_ip: '127.0.0.1' });
  });

  it('550 at RCPT for unknown slugs, other domains, deleted addresses and non-addresses; known ones go on', async () => {
    const [a, gone] = [await createAddress(svc.baseUrl), await createAddress(svc.baseUrl)];
    assert.equal((await api(svc.baseUrl, 'DELETE', `/api/v1/addresses/${gone.id}`, { token: gone.token })).status, 204);
    const s = await RawSmtp.ready(svc.smtpPort);
    try {
      assert.equal((await s.cmd('MAIL FROM:<sender@example.org>')).code, 250);
      for (const rcpt of [
        `zzzzzzzzzzzz@${DOMAIN}`,
        `zzzzzzzzzzzz+tag@${DOMAIN}`,
        `${a.slug}@other.example`,
        gone.email,
        `postmaster@${DOMAIN}`,
        `${a.slug}@127.0.0.1`,
      ]) {
        const r = await s.cmd(`RCPT TO:<${rcpt}>`);
        assert.equal(r.code, 550, `${rcpt}: ${r.text}`);
      }
      assert.equal((await s.cmd('DATA')).code, 503, 'no accepted recipient, no DATA');
      const upper = `${a.slug.toUpperCase()}@${DOMAIN.toUpperCase()}`;
      assert.equal((await s.cmd(`RCPT TO:<${upper}>`)).code, 250, 'case does not matter');
      const { final } = await s.data(simpleMessage({ to: upper, subject: 'after refusals' }));
      assert.equal(final?.code, 250, final?.text);
    } finally {
      await s.quit();
    }
    const evs = await events(svc, a);
    assert.deepEqual(
      evs.map((e) => e.data.subject),
      ['after refusals'],
    );
    assert.equal(evs[0].metadata.smtp_rcpt_to, `${a.slug.toUpperCase()}@${DOMAIN.toUpperCase()}`, 'the recipient as the client sent it');
  });

  it('an MTA retry with the same Message-ID is accepted and creates no second event', async () => {
    const a = await createAddress(svc.baseUrl);
    const message = simpleMessage({ to: a.email, messageId: 'retry-1@example.org', subject: 'once' });
    const r1 = await sendRaw(svc.smtpPort, { from: 'mta@example.org', rcpts: [a.email], message });
    const r2 = await sendRaw(svc.smtpPort, { from: 'mta@example.org', rcpts: [a.email], message: message.replace('Subject: once', 'Subject: twice') });
    assert.equal(r1.final?.code, 250);
    assert.equal(r2.final?.code, 250, 'the retry is not bounced');
    const evs = await events(svc, a);
    assert.equal(evs.length, 1);
    assert.equal(evs[0].data.subject, 'once', 'the original event is kept');
    assert.ok(r2.final?.text.includes(evs[0].id), `the retry is answered with the original event: ${r2.final?.text}`);
    // The same Message-ID over HTTP as an Idempotency-Key is another key space (a mail cannot pre-empt an HTTP sender's key): a new event.
    const http = await deliver(svc.baseUrl, a, { data: 'x' }, 'retry-1@example.org');
    assert.equal(http.status, 202);
    assert.equal(http.json.duplicate, false);
  });

  it('plus-addressing routes to the slug and records the tag', async () => {
    const a = await createAddress(svc.baseUrl);
    const rcpt = `${a.slug}+Build-42@${DOMAIN}`;
    const r = await sendRaw(svc.smtpPort, { from: 'ci@example.org', rcpts: [rcpt], message: simpleMessage({ to: rcpt, subject: 'tagged' }) });
    assert.equal(r.rcpt[0]?.code, 250);
    assert.equal(r.final?.code, 250);
    const [ev] = await events(svc, a);
    assert.equal(ev.metadata.tag, 'Build-42');
    assert.equal(ev.metadata.smtp_rcpt_to, rcpt);
    assert.equal(ev.data.subject, 'tagged');
  });

  it('several recipients: one event per address, also when one address is named twice', async () => {
    const [a, b, stranger] = [await createAddress(svc.baseUrl), await createAddress(svc.baseUrl), `nobodyhere12@${DOMAIN}`];
    const rcpts = [a.email, b.email, `${a.slug}+again@${DOMAIN}`, stranger];
    // No Message-ID: nothing to deduplicate on, so one event per address must come from the listener itself.
    const r = await sendRaw(svc.smtpPort, {
      from: 'sender@example.org',
      rcpts,
      message: simpleMessage({ to: [a.email, b.email], subject: 'fan-out', messageId: null }),
    });
    assert.deepEqual(
      r.rcpt.map((x) => x.code),
      [250, 250, 250, 550],
    );
    assert.equal(r.final?.code, 250);
    assert.match(r.final?.text ?? '', /2 events/);
    const [ea, eb] = [await events(svc, a), await events(svc, b)];
    assert.equal(ea.length, 1);
    assert.equal(eb.length, 1);
    assert.equal(ea[0].metadata.smtp_rcpt_to, a.email, 'the first recipient naming the address');
    assert.equal(eb[0].metadata.smtp_rcpt_to, b.email);
    assert.equal('dedupe_key' in ea[0], false, 'no Message-ID, no dedupe key');
    const own = (e: any) => ({ ...e.data, raw: { ...e.data.raw, url: undefined } });
    assert.deepEqual(own(ea[0]), own(eb[0]), 'both copies carry the same message');
    assert.ok(ea[0].data.raw.url.includes(`/${a.id}/events/${ea[0].id}/raw`), 'each copy names its own raw bytes');
    assert.ok(eb[0].data.raw.url.includes(`/${b.id}/events/${eb[0].id}/raw`));
  });

  it('malformed MIME becomes an event with a parse_error, and the listener keeps serving', async () => {
    const a = await createAddress(svc.baseUrl);
    const message = [
      'From: broken <<<@@>',
      `To: ${a.email}`,
      'Subject: =?UTF-8?B?!!!?=',
      'Content-Type: multipart/mixed; boundary="nope"',
      '',
      '--other',
      'Content-Type: text/plain; charset=x-unknown',
      'Content-Transfer-Encoding: base64',
      '',
      '@@@ not base64',
      '',
    ].join('\r\n');
    const r = await sendRaw(svc.smtpPort, { from: 'sender@example.org', rcpts: [a.email], message });
    assert.equal(r.final?.code, 250, r.final?.text);
    const [ev] = await events(svc, a);
    assert.equal(ev.type, 'email.received');
    assert.match(ev.data.parse_error, /no MIME part/);
    assert.match(ev.data.text, /@@@ not base64/);
    assert.equal(ev.data.message_id, null);
    const again = await sendRaw(svc.smtpPort, { from: 'sender@example.org', rcpts: [a.email], message: simpleMessage({ to: a.email }) });
    assert.equal(again.final?.code, 250);
  });

  it('raw 8-bit headers (SMTPUTF8 style) are decoded', async () => {
    const a = await createAddress(svc.baseUrl);
    const message = Buffer.concat([
      Buffer.from(`From: Jürgen <j@example.de>\r\nTo: ${a.email}\r\nSubject: Grüße ✓\r\nX-Old: caf`, 'utf8'),
      Buffer.from([0xe9]),
      Buffer.from('\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHallo\r\n', 'utf8'),
    ]);
    const r = await sendRaw(svc.smtpPort, { from: 'j@example.de', rcpts: [a.email], message });
    assert.equal(r.final?.code, 250);
    const [ev] = await events(svc, a);
    assert.equal(ev.data.subject, 'Grüße ✓');
    assert.deepEqual(ev.data.from, { name: 'Jürgen', address: 'j@example.de' });
    assert.equal(ev.data.headers['x-old'], 'café');
  });

  it('a long-poll reader is woken by mail', async () => {
    const a = await createAddress(svc.baseUrl);
    const t0 = Date.now();
    const poll = listEvents(svc.baseUrl, a, { wait: 20 });
    await sleep(300);
    const r = await sendRaw(svc.smtpPort, { from: 'sender@example.org', rcpts: [a.email], message: simpleMessage({ to: a.email, subject: 'wake up' }) });
    assert.equal(r.final?.code, 250);
    const res = await poll;
    const elapsed = Date.now() - t0;
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.json.events.map((e: { data: { subject: string } }) => e.data.subject),
      ['wake up'],
    );
    assert.ok(elapsed < 10_000, `woken after ${elapsed} ms, not at the end of the 20 s wait`);
  });

  it('a client that hangs up in the middle of DATA stores nothing; the listener keeps serving', async () => {
    const a = await createAddress(svc.baseUrl);
    const s = await RawSmtp.ready(svc.smtpPort);
    assert.equal((await s.cmd('MAIL FROM:<sender@example.org>')).code, 250);
    assert.equal((await s.cmd(`RCPT TO:<${a.email}>`)).code, 250);
    assert.equal((await s.cmd('DATA')).code, 354);
    s.write(`${simpleMessage({ to: a.email, subject: 'half' })}more body without the final dot\r\n`);
    await sleep(100);
    s.destroy();
    await sleep(200);
    const r = await sendRaw(svc.smtpPort, { from: 'sender@example.org', rcpts: [a.email], message: simpleMessage({ to: a.email, subject: 'whole' }) });
    assert.equal(r.final?.code, 250);
    const evs = await events(svc, a);
    assert.deepEqual(
      evs.map((e) => e.data.subject),
      ['whole'],
      'only the complete message became an event',
    );
  });

  it('pipelined commands (PIPELINING) are answered in order', async () => {
    const a = await createAddress(svc.baseUrl);
    const s = await RawSmtp.ready(svc.smtpPort);
    try {
      s.write(`MAIL FROM:<sender@example.org>\r\nRCPT TO:<${a.email}>\r\nRCPT TO:<nobodyhere12@${DOMAIN}>\r\nDATA\r\n`);
      const codes = [(await s.reply()).code, (await s.reply()).code, (await s.reply()).code, (await s.reply()).code];
      assert.deepEqual(codes, [250, 250, 550, 354]);
      s.write(`${simpleMessage({ to: a.email, subject: 'pipelined' })}.\r\nMAIL FROM:<x@example.org>\r\n`);
      assert.equal((await s.reply()).code, 250, 'end of DATA');
      assert.equal((await s.reply()).code, 250, 'the next transaction starts');
    } finally {
      await s.quit();
    }
    assert.equal((await events(svc, a))[0]?.data.subject, 'pipelined');
  });

  it('garbage, binary junk and over-long lines do not bring the listener down', async () => {
    const s = await RawSmtp.open(svc.smtpPort);
    await s.reply();
    s.write(randomBytes(4096));
    s.write(`${'A'.repeat(100_000)}\r\n`);
    s.write('MAIL FROM:<\u00ff\u0000>\r\nRCPT TO:<<<>>>\r\nDATA\r\n');
    await sleep(200);
    s.destroy();
    // An early talker: sends before the greeting.
    const early = await RawSmtp.open(svc.smtpPort);
    early.write('EHLO early.example\r\n');
    await sleep(100);
    early.destroy();
    const a = await createAddress(svc.baseUrl);
    const r = await sendRaw(svc.smtpPort, { from: 'sender@example.org', rcpts: [a.email], message: simpleMessage({ to: a.email, subject: 'still here' }) });
    assert.equal(r.final?.code, 250);
    assert.equal((await events(svc, a))[0]?.data.subject, 'still here');
  });

  it('plain SMTP without a certificate: neither STARTTLS nor AUTH is offered', async () => {
    const s = await RawSmtp.open(svc.smtpPort);
    try {
      await s.reply();
      const ehlo = await s.cmd('EHLO test.example');
      assert.equal(ehlo.code, 250);
      assert.doesNotMatch(ehlo.text, /STARTTLS|AUTH/);
      assert.match(ehlo.text, /PIPELINING/);
      assert.match(ehlo.text, /SIZE \d+/);
      assert.ok((await s.cmd('STARTTLS')).code >= 500);
      assert.ok((await s.cmd('AUTH PLAIN AGFAYg==')).code >= 500);
    } finally {
      await s.quit();
    }
  });
});

describe('SMTP listener limits', () => {
  it('a message over MAX_EMAIL_BYTES gets 552, creates nothing, and the session goes on', async () => {
    const svc = await startTestService({ EMAIL_DOMAIN: DOMAIN, MAX_EMAIL_BYTES: '4096' });
    try {
      const a = await createAddress(svc.baseUrl);
      const s = await RawSmtp.ready(svc.smtpPort);
      try {
        assert.equal((await s.cmd('MAIL FROM:<sender@example.org> SIZE=100000')).code, 552, 'a declared SIZE over the limit is refused at MAIL');
        assert.equal((await s.cmd('MAIL FROM:<sender@example.org>')).code, 250);
        assert.equal((await s.cmd(`RCPT TO:<${a.email}>`)).code, 250);
        const { final } = await s.data(simpleMessage({ to: a.email, subject: 'huge', text: 'x'.repeat(76).concat('\n').repeat(100) }));
        assert.equal(final?.code, 552, final?.text);
        assert.equal((await events(svc, a)).length, 0, 'nothing stored');
        assert.equal((await s.cmd('MAIL FROM:<sender@example.org>')).code, 250);
        assert.equal((await s.cmd(`RCPT TO:<${a.email}>`)).code, 250);
        const small = await s.data(simpleMessage({ to: a.email, subject: 'small' }));
        assert.equal(small.final?.code, 250);
      } finally {
        await s.quit();
      }
      assert.deepEqual(
        (await events(svc, a)).map((e) => e.data.subject),
        ['small'],
      );
    } finally {
      await svc.stop();
    }
  });

  it('past SMTP_MAX_BUFFERED_BYTES held by all sessions, a message gets 452 and can be retried', async () => {
    const svc = await startTestService({ EMAIL_DOMAIN: DOMAIN, MAX_EMAIL_BYTES: '65536', SMTP_MAX_BUFFERED_BYTES: '80000' });
    const body = (subject: string) => simpleMessage({ to: '', subject, text: 'y'.repeat(76).concat('\n').repeat(600) });
    try {
      const a = await createAddress(svc.baseUrl);
      const open = async () => {
        const s = await RawSmtp.ready(svc.smtpPort);
        assert.equal((await s.cmd('MAIL FROM:<sender@example.org>')).code, 250);
        assert.equal((await s.cmd(`RCPT TO:<${a.email}>`)).code, 250);
        assert.equal((await s.cmd('DATA')).code, 354);
        return s;
      };
      // Session 1 holds ~46 KB of an unfinished message; session 2's ~46 KB do not fit beside it.
      const s1 = await open();
      const first = body('first').replace(/\r?\n/g, '\r\n');
      s1.write(first);
      await sleep(200);
      const s2 = await open();
      s2.write(`${body('second').replace(/\r?\n/g, '\r\n')}\r\n.\r\n`);
      const refused = await s2.reply();
      assert.equal(refused.code, 452, refused.text);
      s1.write('\r\n.\r\n');
      assert.equal((await s1.reply()).code, 250, 'the message that fitted is stored');
      await s1.quit();
      // The budget is free again: the MTA's retry goes through.
      assert.equal((await s2.cmd('MAIL FROM:<sender@example.org>')).code, 250);
      assert.equal((await s2.cmd(`RCPT TO:<${a.email}>`)).code, 250);
      const retry = await s2.data(body('second'));
      assert.equal(retry.final?.code, 250, retry.final?.text);
      await s2.quit();
      assert.deepEqual(
        (await events(svc, a)).map((e) => e.data.subject),
        ['first', 'second'],
      );
    } finally {
      await svc.stop();
    }
  });

  it("a mail's event JSON counts against SMTP_MAX_BUFFERED_BYTES once, however many recipients, not once per recipient", { timeout: 60_000 }, async () => {
    const svc = await startTestService({ EMAIL_DOMAIN: DOMAIN, MAX_EMAIL_BYTES: String(2 * 1024 * 1024), SMTP_MAX_BUFFERED_BYTES: String(3 * 1024 * 1024) });
    // 300 KB of control characters: each is six characters once JSON-escaped (\u0001), ~1.8 MB of event JSON.
    const controls = `${'\u0001'.repeat(75)}\n`.repeat(4000);
    try {
      const rcpts = await Promise.all([1, 2, 3].map(() => createAddress(svc.baseUrl)));
      const message = (subject: string) => simpleMessage({ to: rcpts.map((r) => r.email), subject, text: controls }).replace(/\r?\n/g, '\r\n');
      // Another session holds 1.5 MB of an unfinished message.
      const holder = await RawSmtp.ready(svc.smtpPort);
      assert.equal((await holder.cmd('MAIL FROM:<sender@example.org>')).code, 250);
      assert.equal((await holder.cmd(`RCPT TO:<${rcpts[0]!.email}>`)).code, 250);
      assert.equal((await holder.cmd('DATA')).code, 354);
      holder.write(simpleMessage({ to: rcpts[0]!.email, subject: 'held', text: `${'z'.repeat(76)}\n`.repeat(20_000) }).replace(/\r?\n/g, '\r\n'));
      await sleep(300);
      // 1.5 MB + 0.3 MB raw fit in 3 MB, but not with the 1.8 MB of JSON: refused for now, nothing stored.
      const busy = await sendRaw(svc.smtpPort, { from: 'sender@example.org', rcpts: rcpts.map((r) => r.email), message: message('fan-out') });
      assert.equal(busy.final?.code, 452, busy.final?.text);
      for (const r of rcpts) assert.deepEqual(await events(svc, r), []);
      holder.write('\r\n.\r\n');
      assert.equal((await holder.reply()).code, 250);
      await holder.quit();
      // Alone, the retry goes through, and each recipient gets the whole mail.
      const retry = await sendRaw(svc.smtpPort, { from: 'sender@example.org', rcpts: rcpts.map((r) => r.email), message: message('fan-out') });
      assert.equal(retry.final?.code, 250, retry.final?.text);
      for (const r of rcpts) {
        const got = (await events(svc, r)).filter((e) => e.data.subject === 'fan-out');
        assert.equal(got.length, 1);
        assert.equal(got[0].data.text.trimEnd(), controls.trimEnd());
      }
    } finally {
      await svc.stop();
    }
  });

  it('a mail larger than MAX_BYTES_PER_ADDRESS once stored is refused for good (552), not retried forever', async () => {
    const svc = await startTestService({ EMAIL_DOMAIN: DOMAIN, MAX_BYTES_PER_ADDRESS: '20000' });
    try {
      const a = await createAddress(svc.baseUrl);
      const big = await sendRaw(svc.smtpPort, {
        from: 'sender@example.org',
        rcpts: [a.email],
        message: simpleMessage({ to: a.email, subject: 'big', text: `${'b'.repeat(76)}\n`.repeat(400) }),
      });
      assert.equal(big.final?.code, 552, big.final?.text);
      assert.deepEqual(await events(svc, a), []);
    } finally {
      await svc.stop();
    }
  });

  it('one client IP holds at most SMTP_MAX_CONNECTIONS_PER_IP connections; the next gets 421, and a closed one frees its place', async () => {
    const svc = await startTestService({ EMAIL_DOMAIN: DOMAIN, SMTP_MAX_CONNECTIONS_PER_IP: '3' });
    try {
      const held = await Promise.all([1, 2, 3].map(() => RawSmtp.ready(svc.smtpPort)));
      const refused = await RawSmtp.open(svc.smtpPort);
      const greeting = await refused.reply();
      assert.equal(greeting.code, 421, greeting.text);
      await refused.quit().catch(() => {});
      await held[0]!.quit();
      await sleep(100);
      // Its place is free again, and mail flows through it.
      const a = await createAddress(svc.baseUrl);
      const sent = await sendRaw(svc.smtpPort, { from: 'sender@example.org', rcpts: [a.email], message: simpleMessage({ to: a.email, subject: 'after' }) });
      assert.equal(sent.final?.code, 250, sent.final?.text);
      for (const s of held.slice(1)) await s.quit();
    } finally {
      await svc.stop();
    }
  });

  it('expired addresses get 550 at RCPT, and at the end of DATA when they expired in between', async () => {
    const svc = await startTestService({ EMAIL_DOMAIN: DOMAIN, DEFAULT_TTL_SECONDS: '1' });
    try {
      const [early, late] = [await createAddress(svc.baseUrl), await createAddress(svc.baseUrl)];
      const s = await RawSmtp.ready(svc.smtpPort);
      try {
        assert.equal((await s.cmd('MAIL FROM:<sender@example.org>')).code, 250);
        assert.equal((await s.cmd(`RCPT TO:<${late.email}>`)).code, 250, 'still live at RCPT');
        await sleep(1200);
        assert.equal((await s.cmd(`RCPT TO:<${early.email}>`)).code, 550, 'expired at RCPT');
        const { final } = await s.data(simpleMessage({ to: late.email, subject: 'too late' }));
        assert.equal(final?.code, 550, `expired before the end of DATA: ${final?.text}`);
      } finally {
        await s.quit();
      }
      // Reading still works during the grace period, and shows nothing was stored.
      assert.equal((await events(svc, late)).length, 0);
    } finally {
      await svc.stop();
    }
  });

  it('stop() ends idle SMTP sessions with 421 promptly', async () => {
    const svc = await startTestService({ EMAIL_DOMAIN: DOMAIN });
    const s = await RawSmtp.ready(svc.smtpPort);
    const t0 = Date.now();
    const next = s.reply();
    await svc.stop();
    assert.equal((await next).code, 421);
    assert.ok(Date.now() - t0 < 5000, `stopped in ${Date.now() - t0} ms`);
    s.destroy();
  });

  it('offers STARTTLS when SMTP_TLS_CERT/KEY are given, and mail goes through over TLS', async () => {
    // A committed self-signed certificate (test/fixtures/tls): the test needs no openssl at run time.
    const dir = fileURLToPath(new URL('../../../test/fixtures/tls/', import.meta.url));
    const svc = await startTestService({ EMAIL_DOMAIN: DOMAIN, SMTP_TLS_CERT: join(dir, 'cert.pem'), SMTP_TLS_KEY: join(dir, 'key.pem') });
    try {
      const s = await RawSmtp.ready(svc.smtpPort);
      const ehlo = await s.cmd('EHLO test.example');
      await s.quit();
      assert.match(ehlo.text, /STARTTLS/);
      assert.doesNotMatch(ehlo.text, /AUTH/);
      const a = await createAddress(svc.baseUrl);
      const transport = nodemailer.createTransport({
        host: '127.0.0.1',
        port: svc.smtpPort,
        secure: false,
        requireTLS: true,
        tls: { rejectUnauthorized: false },
      });
      const info = await transport.sendMail({ from: 'tls@example.org', to: a.email, subject: 'over tls', text: 'secret', messageId: `<${randomUUID()}@x>` });
      transport.close();
      assert.match(info.response, /^250 /);
      assert.equal((await events(svc, a))[0]?.data.subject, 'over tls');
    } finally {
      await svc.stop();
    }
  });
});
