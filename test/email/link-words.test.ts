// The words before a link decide its kind, which is what an agent opens the mail for: bare URLs in plain text as anchors in HTML,
// unsubscribe and verify words in German, French, Spanish, Portuguese and Japanese, and a short
// credential under its own name. Each case is one line of a real mail's shape.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { extractContent } from '../../src/email/extraction.js';

const kindsOfText = (text: string) => extractContent({ subject: null, text, html: null, headers: {} }).links.map((l) => l.kind);
const kindsOfHtml = (html: string) => extractContent({ subject: null, text: null, html, headers: {} }).links.map((l) => l.kind);

describe('link kinds from the words before them', () => {
  const cases: [string, string, string][] = [
    // [words, url, kind]
    ['Or sign in:', 'https://notes.example.com/magic?token=q8Zr2LmPx0', 'magic_link'],
    ['Log in here:', 'https://app.example.com/l?code=Ab12Cd34Ef', 'magic_link'],
    ['Verify your email:', 'https://app.example.com/v/8c1d2e3f4a5b', 'verify'],
    ['Reset your password:', 'https://app.example.com/pw/new', 'reset'],
    ['Unsubscribe:', 'https://mail.example.com/u/1', 'unsubscribe'],
    ['Abmelden:', 'https://mail.example.de/a/1', 'unsubscribe'],
    ['Newsletter abbestellen', 'https://mail.example.de/a/2', 'unsubscribe'],
    ['E-Mail-Adresse bestätigen:', 'https://konto.example.de/r/1', 'verify'],
    ['Konto aktivieren:', 'https://konto.example.de/r/2', 'verify'],
    ['Se désabonner :', 'https://lettre.example.fr/d/1', 'unsubscribe'],
    ['Vérifiez votre adresse e-mail :', 'https://compte.example.fr/v/1', 'verify'],
    ['Pour vous connecter, cliquez ici :', 'https://app.exemple.fr/auth/lien/aZ93kLm0PqR7sT2uVw4x', 'magic_link'],
    ['Darse de baja:', 'https://tienda.ejemplo.es/b/1', 'unsubscribe'],
    ['Para dejar de recibir estos correos:', 'https://tienda.ejemplo.es/b/2', 'unsubscribe'],
    ['Verifica tu correo:', 'https://cuenta.ejemplo.es/v/1', 'verify'],
    ['Cancelar inscrição:', 'https://conta.exemplo.com.br/c/1', 'unsubscribe'],
    ['Descadastre-se:', 'https://conta.exemplo.com.br/c/2', 'unsubscribe'],
    ['Confirme seu e-mail:', 'https://conta.exemplo.com.br/v/1', 'verify'],
    ['Ative sua conta: ativar', 'https://conta.exemplo.com.br/v/2', 'verify'],
    ['Redefinir senha:', 'https://conta.exemplo.com.br/s/1', 'reset'],
    ['配信停止:', 'https://mag.example.jp/u/1', 'unsubscribe'],
    ['メール配信の停止はこちら', 'https://mag.example.jp/u/2', 'unsubscribe'],
    ['メールアドレスの確認:', 'https://id.example.jp/m/1', 'verify'],
    ['Read the article:', 'https://news.example.com/a/1', 'other'],
    ['Track your package:', 'https://track.example.com/t/1Z999AA10123456784', 'other'],
  ];
  for (const [words, url, kind] of cases) {
    it(`"${words} ${url}" is ${kind}, on one line, on the line below, and as an HTML anchor`, () => {
      assert.deepEqual(kindsOfText(`Hello,\n\n${words} ${url}\n\nThanks`), [kind]);
      assert.deepEqual(kindsOfText(`Hello,\n\n${words}\n${url}\n\nThanks`), [kind]);
      assert.deepEqual(kindsOfHtml(`<p>Hello,</p><p>${words} <a href="${url}">${url}</a></p>`), [kind]);
    });
  }

  it('a sign-in word without any credential in the URL is not a magic link', () => {
    assert.deepEqual(kindsOfText('Or sign in: https://notes.example.com/login'), ['other']);
    assert.deepEqual(kindsOfText('Or sign in: https://notes.example.com/login?token=short'), ['other']);
  });

  // In this process's CPU time: a busy machine stretches wall-clock time, not the work a scan does.
  it('1 MiB of the new words and URLs (as text and as HTML) is done within 2 s of CPU', () => {
    const body = 'Abmelden Cancelar inscrição 配信の停止 Or sign in: https://x.example/m?token=abcdefgh1 '.repeat((1024 * 1024) / 90);
    const started = process.cpuUsage();
    const out = extractContent({ subject: null, text: body, html: body, headers: {} });
    const used = process.cpuUsage(started);
    const elapsed = (used.user + used.system) / 1000;
    assert.ok(elapsed < 2000, `${elapsed.toFixed(0)} ms of CPU`);
    assert.ok(out.links.length <= 100);
  });
});
