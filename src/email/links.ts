// The http(s) links of a mail, each with what it is for: data.extracted.links
// (design.md, "Inbound email"). Links are read, never followed or fetched.
//
// Sources, in order: the List-Unsubscribe header (always `unsubscribe`), the anchors of the HTML
// part (classified by their visible text, then by their URL), the bare URLs of the text part
// (classified by the text before them on their line or the line above, then by their URL). A URL
// met twice is listed once, with the most specific kind any occurrence gave it:
// unsubscribe > reset > magic_link > verify > other.
//
// Kinds: `reset` (password reset), `magic_link` (a sign-in link carrying a token: the link itself
// logs in), `verify` (confirm an address, an account, an action), `unsubscribe`, `other`.
import type { HtmlAnchor } from './html-text.js';

export type LinkKind = 'magic_link' | 'verify' | 'reset' | 'unsubscribe' | 'other';

export interface ExtractedLink {
  url: string;
  kind: LinkKind;
}

const PRIORITY: Record<LinkKind, number> = { other: 0, verify: 1, magic_link: 2, reset: 3, unsubscribe: 4 };
const MAX_LINKS = 100;
const MAX_URL_LENGTH = 4096;
/** Bare URLs of the text read at most (a hostile text may hold tens of thousands). */
const MAX_TEXT_URLS = 1000;
/** Characters before a bare URL read for its context. */
const CONTEXT_WINDOW = 600;

const UNSUBSCRIBE_RE = new RegExp(
  [
    // English
    'unsubscri',
    'opt[-_ ]?out',
    'email[-_ ]?preferences',
    'manage[-_ ](?:your[-_ ])?(?:email|subscription|notification|mail)',
    'stop receiving',
    'no longer (?:wish|want) to receive',
    // German
    'abbestellen',
    'abmelden',
    'abmeldung',
    'keine (?:e-?mails|nachrichten|newsletter) mehr',
    // French
    'désabonner',
    'desabonner',
    'désabonnement',
    'desabonnement',
    'désinscri',
    'desinscri',
    'ne plus recevoir',
    // Spanish
    'dar(?:se|te)? de baja',
    'date de baja',
    'cancelar (?:la |tu |su )?suscripción',
    'anular (?:la )?suscripción',
    'desuscrib',
    'dejar de recibir',
    'no (?:deseas|desea|quieres) recibir',
    // Portuguese
    'cancelar (?:a |sua )?inscrição',
    'cancelar (?:a |sua )?assinatura',
    'descadastr',
    'descadastramento',
    'deixar de receber',
    'não (?:quer|deseja) mais receber',
    // Japanese, Chinese
    '配信(?:の)?停止',
    '配信(?:の)?解除',
    '購読(?:の)?解除',
    '登録解除',
    '退订',
    '取消订阅',
    '退訂',
  ].join('|'),
  'i',
);
const RESET_RE =
  /reset|forgot|recover(?:y)?[-_ ]?(?:your[-_ ])?password|password[-_ ]?recovery|new[-_ ]password|zurücksetzen|neues passwort|réinitialis|reinitialis|restablec|recuperar (?:tu |la |su |a |sua )?(?:contraseña|senha)|nueva contraseña|redefinir (?:a |sua )?senha|redefinição de senha|nova senha|パスワード(?:の)?(?:再設定|リセット)|重置密码|重设密码|重設密碼/i;
const SIGN_IN_RE =
  /sign[-_ ]?in|log[-_ ]?in|signin|login|magic|one[-_ ]?click|anmelden|einloggen|se connecter|vous connecter|connectez-vous|connexion|iniciar sesión|inicia sesión|acceder|ingresar|entrar na|entrar em|acessar (?:a |sua )?conta|ログイン|サインイン|登录|登入/i;
const VERIFY_RE =
  /verif|confirm|activat|validat|bestätig|verifizier|aktivier|vérifi|valider|verificar|activar|ativar|ativação|valide|確認|認証|有効化|验证|驗證|激活|确认/i;
const URL_SIGN_IN_RE = /\/(?:magic|login|log-in|signin|sign-in|sign_in|auth\/callback|sessions?\/(?:new|token|magic)|passwordless|email-login)(?:[/?#._-]|$)/i;
const URL_VERIFY_RE = /verif|confirm|activat|validat/i;
const URL_UNSUBSCRIBE_RE = /unsubscri|opt[-_]?out|\/preferences|list-manage\.com\/unsubscribe/i;
const URL_RESET_RE = /reset|forgot|recover/i;

/** Query parameters whose value is a credential by name. */
const CREDENTIAL_PARAM_RE = /^(?:token|code|key|otp|auth|magic|login_token|access_token|t|k)$/i;

/** A query value or path segment of 16+ token characters: the link itself carries a credential. */
function carriesToken(url: URL): boolean {
  for (const [k, v] of url.searchParams) {
    if (/^[A-Za-z0-9_.~%+/=-]{16,}$/.test(v)) return true;
    // A shorter value under a credential's own name ("?token=q8Zr2LmPx0").
    if (CREDENTIAL_PARAM_RE.test(k) && /^[A-Za-z0-9_.~%+/=-]{8,}$/.test(v)) return true;
  }
  return (
    url.pathname.split('/').some((seg) => /^[A-Za-z0-9_.~%+=-]{20,}$/.test(seg) && /\d/.test(seg) && /[A-Za-z]/.test(seg)) ||
    /[#&]?(?:token|code|key)=[A-Za-z0-9_.~%+-]{12,}/i.test(url.hash)
  );
}

/** The kind a link's surrounding words and URL give it. */
export function classifyLink(url: URL, words: string): LinkKind {
  const w = words.slice(0, 500);
  const u = `${url.hostname}${url.pathname}${url.search}`.slice(0, MAX_URL_LENGTH);
  if (UNSUBSCRIBE_RE.test(w)) return 'unsubscribe';
  if (RESET_RE.test(w) && /passw|contrase|senha|passe|kennwort|パスワード|密码|密碼|reset|forgot|zurücksetzen|réinitialis|restablec/i.test(w + u))
    return 'reset';
  if (SIGN_IN_RE.test(w) && carriesToken(url)) return 'magic_link';
  if (VERIFY_RE.test(w)) return 'verify';
  // Words said nothing (an image, "click here", a bare URL): the URL itself.
  if (URL_UNSUBSCRIBE_RE.test(u)) return 'unsubscribe';
  if (URL_RESET_RE.test(url.pathname) && carriesToken(url)) return 'reset';
  if (URL_SIGN_IN_RE.test(url.pathname) && carriesToken(url)) return 'magic_link';
  if (URL_VERIFY_RE.test(url.pathname) && carriesToken(url)) return 'verify';
  return 'other';
}

/** An http(s) URL as given, trailing punctuation removed; null for anything else. */
export function httpUrl(candidate: string): URL | null {
  let s = candidate.trim().replace(/^<|>$/g, '');
  if (s.length > MAX_URL_LENGTH || !/^https?:\/\//i.test(s) || /\s/.test(s)) return null;
  // Sentence punctuation after a bare URL, and a ')' the URL did not open.
  s = s.replace(/[.,;:!?'"\u2019\u201d>\]]+$/, '');
  if (s.endsWith(')') && !s.includes('(')) s = s.slice(0, -1);
  try {
    const url = new URL(s);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : null;
  } catch {
    return null;
  }
}

const TEXT_URL_RE = /https?:\/\/[^\s<>"'\u00a0]{1,4096}/gi;

export interface LinkSources {
  /** The text part (or the text of the HTML part when there is none). */
  text: string;
  anchors: readonly HtmlAnchor[];
  /** The List-Unsubscribe header value, when present. */
  listUnsubscribe?: string | undefined;
}

export function findLinks(sources: LinkSources): ExtractedLink[] {
  const found = new Map<string, LinkKind>();
  const add = (url: URL | null, kind: LinkKind) => {
    if (url === null) return;
    const key = url.href;
    const seen = found.get(key);
    if (seen === undefined) {
      if (found.size < MAX_LINKS) found.set(key, kind);
    } else if (PRIORITY[kind] > PRIORITY[seen]) {
      found.set(key, kind);
    }
  };

  for (const m of (sources.listUnsubscribe ?? '').slice(0, 8192).matchAll(/<([^<>]{1,4096})>/g)) add(httpUrl(m[1] ?? ''), 'unsubscribe');
  for (const a of sources.anchors) {
    const url = httpUrl(a.href);
    if (url === null) continue;
    const kind = classifyLink(url, a.text);
    // "配信停止は<a>こちら</a>", "To unsubscribe <a>click here</a>": the words before the anchor.
    add(url, kind === 'other' && a.before !== '' ? classifyLink(url, a.before) : kind);
  }
  let seen = 0;
  for (const m of sources.text.matchAll(TEXT_URL_RE)) {
    if (++seen > MAX_TEXT_URLS) break;
    const url = httpUrl(m[0]);
    if (url) add(url, classifyLink(url, wordsBefore(sources.text, m.index ?? 0)));
  }
  return [...found].map(([url, kind]) => ({ url, kind }));
}

/** The words a bare URL follows: its line up to it, or else the previous non-empty line. */
function wordsBefore(text: string, index: number): string {
  // Only a short window before the URL is read: the work per URL is bounded, whatever the lines.
  const window = text.slice(Math.max(0, index - CONTEXT_WINDOW), index);
  const lines = window.split('\n');
  const own = (lines.pop() ?? '').replace(/https?:\/\/\S*/g, ' ');
  if (/\p{L}{2}/u.test(own)) return own.slice(-200);
  // The nearest non-empty line above, skipping a few blank ones.
  for (let tries = 0; tries < 3 && lines.length > 0; tries++) {
    const line = lines.pop() ?? '';
    if (line.trim() !== '') return `${line.slice(-200)} ${own}`;
  }
  return own;
}
