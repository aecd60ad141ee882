// A sender must not be able to stall the service with a mail: untrusted mail is parsed in worker threads with a heap and a time budget, and its
// structure is counted before any library reads it. Each attack runs over real SMTP against the
// whole service with a liveness probe beside it: /healthz must answer within 1 s throughout (on the
// old code each of these held the event loop from 17 s to a minute), and the mail is still stored
// and answered 250.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MAX_DKIM_SIGNATURES, MAX_MIME_PARTS, messageShape, withBoundedDkimSignatures } from '../../src/email/message-limits.js';
import { replyText } from '../../src/email/reply-text.js';
import { type Addr, createAddress, listEvents, startTestService, type TestService } from '../helpers.js';
import { LIVENESS_MS, startLivenessProbe } from '../liveness-probe.js';
import { RawSmtp, type Reply } from './smtp-client.js';

const DOMAIN = 'mail.example.test';

/** Sends `raw` exactly as given (no line-end rewriting, so bare LFs stay bare), then the final dot. */
async function sendExact(port: number, rcpt: string, raw: Buffer): Promise<Reply> {
  const s = await RawSmtp.open(port, '127.0.0.1', 120_000);
  try {
    assert.equal((await s.reply()).code, 220);
    assert.equal((await s.cmd('EHLO attacker.example')).code, 250);
    assert.equal((await s.cmd('MAIL FROM:<a@attacker.example>')).code, 250);
    assert.equal((await s.cmd(`RCPT TO:<${rcpt}>`)).code, 250);
    assert.equal((await s.cmd('DATA')).code, 354);
    s.write(raw);
    s.write('\r\n.\r\n');
    return await s.reply();
  } finally {
    await s.quit();
  }
}

async function onlyEvent(svc: TestService, a: Addr): Promise<any> {
  const res = await listEvents(svc.baseUrl, a, { limit: 10 });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.json.events.length, 1);
  return res.json.events[0];
}

/** Runs `attack` with the liveness probe beside it; /healthz must answer within 1 s throughout. */
async function withProbe<T>(svc: TestService, attack: () => Promise<T>): Promise<T> {
  const probe = startLivenessProbe(svc.baseUrl);
  let result: T;
  try {
    result = await attack();
  } finally {
    const { maxMs, answers, failures } = await probe.stop();
    assert.deepEqual(failures, [], 'every /healthz got an answer');
    assert.ok(answers > 0, 'the probe ran');
    assert.ok(maxMs < LIVENESS_MS, `/healthz answered within ${LIVENESS_MS} ms during the attack (slowest: ${Math.round(maxMs)} ms)`);
  }
  return result;
}

const headers = (extra = '') =>
  `From: Mallory <m@attacker.example>\r\nTo: victim@${DOMAIN}\r\nSubject: attack\r\nMessage-ID: <${Math.random()}@attacker.example>\r\n${extra}`;

describe('message structure counted before any library reads it', () => {
  it('counts DKIM-Signature headers, parts, containers and addresses in one pass', () => {
    const raw = Buffer.from(
      `DKIM-Signature: v=1; a=rsa-sha256\r\ndkim-signature: v=1\r\nTo: a@x.example, b@x.example,\r\n c@x.example\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type:\r\n message/rfc822\r\n\r\nDKIM-Signature: inner, not counted\r\nContent-Type: text/plain\r\n\r\nhi\r\n--b--\r\n`,
    );
    assert.deepEqual(messageShape(raw), { dkimSignatures: 2, parts: 3, containers: 2, addresses: 3 });
  });

  it(`shows mailauth only the first ${MAX_DKIM_SIGNATURES} DKIM-Signature headers`, () => {
    const sigs = Array.from({ length: 20 }, (_, i) => `DKIM-Signature: v=1; l=${i};\r\n b=x${i}\r\n`).join('');
    const raw = Buffer.from(`${sigs}From: a@x.example\r\n\r\nbody\r\nDKIM-Signature: in the body stays\r\n`);
    const bounded = withBoundedDkimSignatures(raw, messageShape(raw)).toString();
    assert.equal(messageShape(Buffer.from(bounded)).dkimSignatures, MAX_DKIM_SIGNATURES);
    assert.match(bounded, /b=x7\r\n/);
    assert.doesNotMatch(bounded, /b=x8\r\n/);
    assert.ok(bounded.endsWith('\r\n\r\nbody\r\nDKIM-Signature: in the body stays\r\n'), 'the body is kept whole');
  });

  it('reply_text of a line holding a 250 KB run of spaces is linear', () => {
    // /\s+$/ retried from every space of the run: about a minute on the old code.
    const started = performance.now();
    assert.equal(replyText(`Hello${' '.repeat(250_000)}x\n-- \nsig`), `Hello${' '.repeat(250_000)}x`.slice(0, 1000).trim());
    assert.ok(performance.now() - started < 5000);
  });
});

describe('untrusted mail over real SMTP, with a liveness probe', () => {
  let svc: TestService;
  let heapCapped: TestService;
  let timeCapped: TestService;
  before(async () => {
    svc = await startTestService({ EMAIL_DOMAIN: DOMAIN, MAIL_PARSE_TIMEOUT_MS: '20000' });
    // Services whose parsers have one small limit each, to show that each limit alone ends a worker.
    heapCapped = await startTestService({ EMAIL_DOMAIN: DOMAIN, MAIL_PARSE_TIMEOUT_MS: '60000', MAIL_PARSE_MAX_HEAP_MB: '48' });
    timeCapped = await startTestService({ EMAIL_DOMAIN: DOMAIN, MAIL_PARSE_TIMEOUT_MS: '1500', MAIL_PARSE_MAX_HEAP_MB: '1024' });
  });
  after(async () => {
    await svc.stop();
    await heapCapped.stop();
    await timeCapped.stop();
  });

  it('a text mail with a 250 KB run of spaces inside a line is stored with its reply text', async () => {
    const a = await createAddress(svc.baseUrl);
    const raw = Buffer.from(`${headers()}\r\nHello${' '.repeat(250_000)}world\r\n`);
    const reply = await withProbe(svc, () => sendExact(svc.smtpPort, a.email!, raw));
    assert.equal(reply.code, 250, reply.text);
    const ev = await onlyEvent(svc, a);
    assert.equal(ev.data.parse_error, null);
    assert.match(ev.data.extracted.reply_text, /^Hello/);
  });

  it('200 DKIM-Signature headers over a 2 MB body: stored, authenticated on the first few, no library output in the log', async () => {
    const a = await createAddress(svc.baseUrl);
    // Each signature a distinct body-length tag, so mailauth would hash the body once per signature.
    const sigs = Array.from(
      { length: 200 },
      (_, i) => `DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=attacker.example; s=s${i}; l=${1_000_000 + i}; h=from; bh=AAAA; b=AAAA\r\n`,
    ).join('');
    const raw = Buffer.from(`${sigs}${headers()}\r\n${'x'.repeat(998)}\r\n`.padEnd(2_000_000, `${'y'.repeat(998)}\r\n`));
    const written: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
      written.push(String(chunk));
      return write(chunk, ...rest);
    }) as typeof process.stdout.write;
    let reply: Reply;
    try {
      reply = await withProbe(svc, () => sendExact(svc.smtpPort, a.email!, raw));
    } finally {
      process.stdout.write = write;
    }
    assert.equal(reply.code, 250, reply.text);
    assert.deepEqual(
      written.filter((w) => /TOTAL|EXPECTING/.test(w)),
      [],
      'mailauth printed nothing into the service log',
    );
    const ev = await onlyEvent(svc, a);
    assert.equal(ev.data.authentication.dkim === 'pass', false);
    assert.equal(ev.data.headers['dkim-signature'].split('\n').length, 200, 'every signature header is kept in the event');
  });

  it(`60,000 nested message/rfc822 parts: not handed to the parser (more than ${MAX_MIME_PARTS} parts), stored with parse_error`, async () => {
    const a = await createAddress(svc.baseUrl);
    const raw = Buffer.from(`${headers('Content-Type: message/rfc822\r\n')}\r\n${'Content-Type: message/rfc822\r\n\r\n'.repeat(60_000)}the end\r\n`);
    const reply = await withProbe(svc, () => sendExact(svc.smtpPort, a.email!, raw));
    assert.equal(reply.code, 250, reply.text);
    const ev = await onlyEvent(svc, a);
    assert.match(ev.data.parse_error, new RegExp(`more than ${MAX_MIME_PARTS} MIME parts`));
    assert.equal(ev.data.subject, 'attack');
    assert.equal(ev.data.raw_size, raw.byteLength + 2, 'the bytes as received (sendExact ends the data with CRLF)');
  });

  it('a 1.9 MB mail of bare line feeds passes the worker heap limit: the worker is ended, the mail stored unparsed and answered 250', async () => {
    const a = await createAddress(heapCapped.baseUrl);
    const raw = Buffer.from(`${headers()}\r\n${'\n'.repeat(1_900_000)}`);
    const reply = await withProbe(heapCapped, () => sendExact(heapCapped.smtpPort, a.email!, raw));
    assert.equal(reply.code, 250, reply.text);
    const ev = await onlyEvent(heapCapped, a);
    assert.match(ev.data.parse_error, /passed its heap limit of 48 MB/);
    assert.equal(ev.data.subject, 'attack', 'the top-level headers are still read');
    // The exact message is kept beside the event (design.md, "Bounded work") and downloadable.
    assert.equal(ev.data.raw.size, raw.byteLength + 2);
    const download = await fetch(ev.data.raw.url, { headers: { authorization: `Bearer ${a.token}` } });
    assert.equal(download.status, 200);
    assert.equal((await download.arrayBuffer()).byteLength, raw.byteLength + 2);
    assert.equal(ev.data.raw_size, raw.byteLength + 2, 'the bytes as received (sendExact ends the data with CRLF)');
  });

  it('a mail that passes the time budget within the heap limit: the worker is ended after MAIL_PARSE_TIMEOUT_MS', async () => {
    const a = await createAddress(timeCapped.baseUrl);
    // ~400,000 short lines: several seconds of postal-mime work, little memory (150,000 took 1.3-2.6 s
    // here, so a quiet moment could parse them inside the 1.5 s budget and the test then failed).
    const raw = Buffer.from(`${headers()}\r\n${'ab\r\n'.repeat(400_000)}`);
    const started = performance.now();
    const reply = await withProbe(timeCapped, () => sendExact(timeCapped.smtpPort, a.email!, raw));
    assert.equal(reply.code, 250, reply.text);
    assert.ok(performance.now() - started < 10_000, 'answered within the budget, not after the whole parse');
    const ev = await onlyEvent(timeCapped, a);
    assert.match(ev.data.parse_error, /passed its time budget of 1500 ms/);
    // The next mail gets a fresh worker and is parsed normally.
    const b = await createAddress(timeCapped.baseUrl);
    assert.equal((await sendExact(timeCapped.smtpPort, b.email!, Buffer.from(`${headers()}\r\nfine\r\n`))).code, 250);
    const ok = await onlyEvent(timeCapped, b);
    assert.equal(ok.data.parse_error, null);
    assert.equal(ok.data.text.trim(), 'fine');
  });
});
