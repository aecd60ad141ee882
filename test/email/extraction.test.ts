// data.extracted: the corpus scores, the rules one by one, and the time bound on hostile input.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { extractContent, MAX_SCANNED_CHARS } from '../../src/email/extraction.js';
import { htmlToText } from '../../src/email/html-text.js';
import { findLinks } from '../../src/email/links.js';
import { parseEmailMessage } from '../../src/email/mime-to-event.js';
import { findOtpCodes } from '../../src/email/otp-codes.js';
import { replyText } from '../../src/email/reply-text.js';
import { formatScore, scoreCorpus } from './extraction-corpus.js';

/** CPU milliseconds this process spent since `since` (process.cpuUsage()): other processes' load does not count. */
const cpuMs = (since: NodeJS.CpuUsage) => {
  const u = process.cpuUsage(since);
  return (u.user + u.system) / 1000;
};

const NO_HEADERS = {};

describe('extraction corpus (test/fixtures/email/corpus)', () => {
  it('OTP codes and link kinds reach their precision and recall; reply texts are exact', async () => {
    const s = await scoreCorpus();
    console.log(formatScore(s));
    assert.ok(s.messages >= 30, `${s.messages} messages`);
    assert.ok(s.otp.truePositives >= 15 && s.links.truePositives >= 15, 'the corpus has enough positives to measure');
    assert.ok(s.otp.precision >= 0.95, `OTP precision ${s.otp.precision}`);
    assert.ok(s.otp.recall >= 0.9, `OTP recall ${s.otp.recall}`);
    assert.ok(s.links.precision >= 0.9, `link precision ${s.links.precision}`);
    assert.ok(s.links.recall >= 0.9, `link recall ${s.links.recall}`);
    assert.ok(s.replies.checked >= 6 && s.replies.exact === s.replies.checked, `reply texts ${s.replies.exact}/${s.replies.checked}`);
  });
});

describe('one-time codes', () => {
  it('finds codes after and before their code word, in several languages', () => {
    assert.deepEqual(findOtpCodes('Your verification code is: 482913'), ['482913']);
    assert.deepEqual(findOtpCodes('482913 is your Instagram code'), ['482913']);
    assert.deepEqual(findOtpCodes('Your one-time passcode:\n\n  K7P2XQ  \n'), ['K7P2XQ']);
    assert.deepEqual(findOtpCodes('Confirmation code: 482-913'), ['482913'], 'groups are joined');
    assert.deepEqual(findOtpCodes('Ihr Sicherheitscode lautet 7391'), ['7391']);
    assert.deepEqual(findOtpCodes('Votre code de vérification : 264810'), ['264810']);
    assert.deepEqual(findOtpCodes('Tu código es 918273'), ['918273']);
    assert.deepEqual(findOtpCodes('验证码：558812'), ['558812']);
    assert.deepEqual(findOtpCodes('認証コード 502817'), ['502817']);
    assert.deepEqual(findOtpCodes('Code: 111111 or, again, code: 111111'), ['111111'], 'no duplicates');
    assert.deepEqual(findOtpCodes('Your new PIN: 1987'), ['1987'], 'a year-like number right after its code word');
  });

  it('ignores numbers that are not codes, even next to a code word', () => {
    for (const text of [
      'Call 1-800-555-0199 about your code',
      'Your code expires on 2024-10-12',
      'code valid until 12/10/2024',
      'Security code sent. Total: $1,234.56',
      'Verification for order #12345678',
      'Your code: see order 1234567890123',
      'Zip code 94107',
      'código postal 28013',
      'code postal 75008',
      'Use promo code SAVE20 today',
      'Discount code WEEKLY2024',
      'Your code was sent to +1 415 555 0132',
      'Enter the code at https://example.com/verify?code=123456',
      'Code of Conduct 2024',
      'The CODE word HTML',
    ]) {
      assert.deepEqual(findOtpCodes(text), [], text);
    }
  });

  it('numbers far from any code word are not codes', () => {
    assert.deepEqual(findOtpCodes('Order 48213957 shipped. Invoice 55120934.'), []);
    const far = `Your code is below.${' filler words'.repeat(10)} 482913`;
    assert.deepEqual(findOtpCodes(far), []);
  });
});

describe('links', () => {
  it('classifies, dedupes, keeps only http(s) and takes List-Unsubscribe as unsubscribe', () => {
    const html = `
      <a href="https://a.example/verify?token=abcdefghijklmnop1234">Verify your email</a>
      <a href="https://a.example/verify?token=abcdefghijklmnop1234"><img src="x.png" alt=""></a>
      <a href="https://a.example/pw/reset/abcdefghijklmnopqrstuvwx12">Reset password</a>
      <a href="https://a.example/magic/abcdefghijklmnopqrstuvwx12">Sign in to Acme</a>
      <a href="https://a.example/signin">Sign in</a>
      <a href="javascript:alert(1)">Verify</a> <a href="mailto:x@a.example">Verify</a> <a href="data:text/html,x">Verify</a>
      <a href="ftp://a.example/file">Download</a>
      <p>Unsubscribe: <a href="https://a.example/u/1">click here</a></p>
      <a href="https://a.example/blog?x=1&amp;y=2">Blog</a>`;
    const { anchors, text } = htmlToText(html);
    const links = findLinks({ text, anchors, listUnsubscribe: '<mailto:u@a.example>, <https://a.example/list-unsub/99>' });
    assert.deepEqual(links, [
      { url: 'https://a.example/list-unsub/99', kind: 'unsubscribe' },
      { url: 'https://a.example/verify?token=abcdefghijklmnop1234', kind: 'verify' },
      { url: 'https://a.example/pw/reset/abcdefghijklmnopqrstuvwx12', kind: 'reset' },
      { url: 'https://a.example/magic/abcdefghijklmnopqrstuvwx12', kind: 'magic_link' },
      { url: 'https://a.example/signin', kind: 'other' },
      { url: 'https://a.example/u/1', kind: 'unsubscribe' },
      { url: 'https://a.example/blog?x=1&y=2', kind: 'other' },
    ]);
  });

  it('bare URLs in text are classified by the words before them and lose trailing punctuation', () => {
    const text = 'Reset your password here:\nhttps://a.example/reset/Zm9vYmFyYmF6cXV4MTIzNDU2.\n\nRead the docs (https://a.example/docs).';
    assert.deepEqual(findLinks({ text, anchors: [] }), [
      { url: 'https://a.example/reset/Zm9vYmFyYmF6cXV4MTIzNDU2', kind: 'reset' },
      { url: 'https://a.example/docs', kind: 'other' },
    ]);
  });
});

describe('reply text', () => {
  it('drops quoted history and signatures', () => {
    assert.equal(replyText('Yes.\n\nOn Tue, 1 Oct 2024, Alice <a@x> wrote:\n> question?\n'), 'Yes.');
    assert.equal(replyText('Fine by me.\n-- \nBob\n+1 555 0100'), 'Fine by me.');
    assert.equal(replyText('Ok\n\nSent from my iPhone\n\n> older'), 'Ok');
    assert.equal(replyText('Agreed.\n\n-----Original Message-----\nFrom: A\nSent: today\n\nold text'), 'Agreed.');
    assert.equal(replyText('Agreed.\n\nFrom: Alice <a@x>\nSent: Monday\nTo: Bob\nSubject: plan\n\nold'), 'Agreed.');
    assert.equal(replyText('> a\nanswer a\n> b\nanswer b'), 'answer a\nanswer b');
    assert.equal(replyText('> only a quote\n'), null);
  });

  it('html-only replies lose the Gmail quote', async () => {
    const raw =
      'Subject: Re: x\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<div dir="ltr">Sure, go ahead.</div><div class="gmail_quote">On Mon, A wrote:<blockquote>old</blockquote></div>\r\n';
    assert.equal((await parseEmailMessage(Buffer.from(raw))).extracted.reply_text, 'Sure, go ahead.');
  });
});

describe('html to text', () => {
  it('drops scripts, styles and comments; decodes entities; blocks make lines', () => {
    const { text } = htmlToText(
      '<html><head><style>p{x}</style><title>T</title></head><body><script>var code = 123456;</script><!-- 999999 --><p>A&amp;B&nbsp;&#x263A;&#39;</p><div>line 2<br>line 3</div></body></html>',
    );
    assert.equal(text, "A&B \u263A'\n\nline 2\nline 3", 'a paragraph after a paragraph: one blank line');
  });
});

describe('bounded work on hostile input', () => {
  const MB = 1024 * 1024;
  const hostile: Record<string, string> = {
    'a million <': '<'.repeat(MB),
    'unterminated anchors': '<a href="https://x.example/'.repeat(MB / 27),
    'many anchors': '<a href=https://x.example/1>verify</a>'.repeat(MB / 38),
    'open script': `<script>${'x'.repeat(MB)}`,
    'code words and digits': 'code 1234 '.repeat(MB / 10),
    'digits with separators': '1-2-3-4-5-6-7-8-9-'.repeat(MB / 18),
    'a long URL': `https://x.example/${'a'.repeat(MB)}`,
    'long words': `${'A'.repeat(MB)} code`,
    'quote-like lines': 'On a wrote On b wrote On c\n'.repeat(MB / 27),
    'one long line of "On"': `On ${'x '.repeat(MB / 2)}`,
    'Japanese dates': '2024年10月1日 '.repeat(MB / 11),
    entities: '&#x263A;&amp;&unknown;'.repeat(MB / 22),
    'outlook headers': 'From: a\n'.repeat(MB / 8),
    'keywords only': 'verification '.repeat(MB / 13),
  };
  for (const [name, body] of Object.entries(hostile)) {
    // Measured in this process's CPU time, not wall-clock time: a busy machine lengthens the second
    // and leaves the first alone, and the first is what a quadratic scan would blow up.
    it(`${name} (1 MiB, as text and as html) is done within 2 s of CPU`, () => {
      const started = process.cpuUsage();
      const out = extractContent({ subject: body.slice(0, 1000), text: body, html: body, headers: { 'list-unsubscribe': body } });
      const elapsed = cpuMs(started);
      assert.ok(elapsed < 2000, `${name}: ${elapsed.toFixed(0)} ms of CPU`);
      assert.ok(out.links.length <= 100 && out.otp_codes.length <= 10);
    });
  }

  it('reads only the first MAX_SCANNED_CHARS of a body', () => {
    const text = `${'x'.repeat(MAX_SCANNED_CHARS)} verification code 482913`;
    assert.deepEqual(extractContent({ subject: null, text, html: null, headers: NO_HEADERS }).otp_codes, []);
    assert.deepEqual(extractContent({ subject: null, text: text.slice(MAX_SCANNED_CHARS - 100), html: null, headers: NO_HEADERS }).otp_codes, ['482913']);
  });

  it('a 2 MiB hostile message goes through parseEmailMessage quickly', async () => {
    const html = '<a href="https://x.example/verify?t=1">'.repeat((2 * MB) / 40);
    const raw = Buffer.from(`Subject: code\r\nContent-Type: text/html\r\n\r\n${html}\r\n`);
    const started = process.cpuUsage();
    const data = await parseEmailMessage(raw);
    assert.ok(cpuMs(started) < 4000, `${cpuMs(started).toFixed(0)} ms of CPU`);
    assert.ok(data.extracted.links.length <= 1);
  });
});
