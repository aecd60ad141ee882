// One-time codes in a mail's text: data.extracted.otp_codes (design.md, "Inbound email").
//
// A candidate is 4-8 digits, two equal groups of 3 or 4 digits ("123 456", "123-456"), or 4-8
// upper-case letters and digits with at least one of each. It counts only when a code word is near:
// up to 60 characters before it with no other number in between ("Your code: 482913"), or right
// after it in the same sentence ("482913 is your Slack code"). Code words: code, verification,
// OTP, passcode, PIN, one-time, código, Bestätigungscode, vérification, 验证码, 認証コード, …; a
// code word that is really about something else (zip code, promo code, code postal) does not count.
// A candidate is refused when it is part of a longer number (phone numbers, dates, "1,234.56"),
// next to a currency, after '#', inside a URL, or a year (1900-2099) not right after a code word.
//
// Linear time: a few global scans with bounded quantifiers; callers cap the text length.

/** Code words, matched case-insensitively at the start of a word; compounds ending in -code too. */
const KEYWORD_RE = new RegExp(
  [
    String.raw`(?<![\p{L}\p{N}])(?:\p{L}{0,24}code[sn]?|codes?|verification|verificación|vérification|verificação|verifizierung|verify|otp|passcodes?|pass code|pins?|one[- ]time|2fa|two[- ]factor|mfa|código|codigo|clave|contraseña|codice|kod|код)(?![\p{L}\p{N}])`,
    '验证码|驗證碼|校验码|动态码|认证码|確認コード|認証コード|認証番号|確認番号|ワンタイム|パスコード|인증번호|인증 코드|인증코드',
  ].join('|'),
  'giu',
);
/** Words ending in "code" that are not about one-time codes. */
const NOT_CODE_WORDS = new Set([
  'barcode',
  'postcode',
  'zipcode',
  'promocode',
  'qrcode',
  'encode',
  'decode',
  'encoded',
  'decoded',
  'unicode',
  'opcode',
  'geocode',
  'sourcecode',
  'gutscheincode',
  'rabattcode',
  'aktionscode',
  'promotioncode',
  'discountcode',
  'vouchercode',
  'couponcode',
  'trackingcode',
  'colorcode',
  'colourcode',
  'errorcode',
  'statuscode',
  'dresscode',
  'areacode',
]);
/** A code word right after one of these is about something else ("zip code", "promo code"). */
const NOT_CODE_BEFORE =
  /(?:zip|postal|post|promo|promotion(?:al)?|discount|coupon|voucher|gift|tracking|source|qr|bar|error|status|dial|area|country|tax|sort|swift|bank|referral|product|colou?r|dress|region|html|css|embed)[\s-]*$/i;
/** …or right before one of these ("code postal", "código de descuento"). */
const NOT_CODE_AFTER = /^[\s:]*(?:postal|de descuento|de réduction|promo|promocional|promotionnel|de promoción|de cupón)/i;

const CANDIDATE_RE = /(?<![\p{L}\p{N}_])(\d{3,4}[ -]\d{3,4}|[A-Z0-9]{4,8})(?![\p{L}\p{N}_])/gu;
const URL_RE = /\b(?:https?|ftp):\/\/[^\s<>"']{0,4096}|\bwww\.[^\s<>"']{1,4096}/gi;
const CURRENCY_BEFORE = /(?:[$€£¥₹₩]|\b(?:usd|eur|gbp|chf|jpy|cny|rmb|inr|aud|cad|us\$|rs\.?))\s?$/i;
const CURRENCY_AFTER = /^\s?(?:[$€£¥₹₩円元]|(?:usd|eur|gbp|chf|jpy|cny|rmb|inr|aud|cad|dollars?|euros?|yen|kr)\b)/i;

const BEFORE_WINDOW = 60;
const AFTER_WINDOW = 40;
const MAX_CODES = 10;

interface Span {
  start: number;
  end: number;
}

/** The one-time codes of a text, in order of appearance, without duplicates. */
export function findOtpCodes(input: string): string[] {
  // URLs carry tokens and ids that are not for a human to type.
  const text = input.replace(URL_RE, (u) => ' '.repeat(u.length));
  const keywords: Span[] = [];
  for (const m of text.matchAll(KEYWORD_RE)) {
    const start = m.index ?? 0;
    const word = m[0].toLowerCase();
    if (NOT_CODE_WORDS.has(word) || /^\p{L}*(?:zip|post|promo|bar|qr|en|de|uni|op|geo|source)code[sn]?$/u.test(word)) continue;
    if (NOT_CODE_BEFORE.test(text.slice(Math.max(0, start - 16), start))) continue;
    if (NOT_CODE_AFTER.test(text.slice(start + m[0].length, start + m[0].length + 20))) continue;
    keywords.push({ start, end: start + m[0].length });
  }
  if (keywords.length === 0) return [];

  const codes: string[] = [];
  let k = 0; // keywords[k] is the first code word that ends after the candidate's start
  for (const m of text.matchAll(CANDIDATE_RE)) {
    const raw = m[1] ?? '';
    const start = m.index ?? 0;
    const end = start + raw.length;
    const code = candidateCode(raw);
    if (code === null || partOfSomethingElse(text, start, end)) continue;
    while (k < keywords.length && keywords[k]!.end <= start) k++;
    const before = keywords[k - 1];
    const after = keywords[k];
    const nearBefore = before !== undefined && start - before.end <= BEFORE_WINDOW && !/\d{4}/.test(text.slice(before.end, start));
    const nearAfter = after !== undefined && after.start >= end && after.start - end <= AFTER_WINDOW && !/[.!?;:\n。！？\d]/.test(text.slice(end, after.start));
    if (!nearBefore && !nearAfter) continue;
    // A year is taken only right after its code word ("PIN: 1987"), never from a date-like line.
    if (/^(?:19|20)\d\d$/.test(code) && !(nearBefore && /^[\s:：#-]*(?:is|lautet|est|es|:)?[\s:：]*$/i.test(text.slice(before!.end, start)))) continue;
    if (!codes.includes(code)) codes.push(code);
    if (codes.length >= MAX_CODES) break;
  }
  return codes;
}

/** The code a candidate stands for, or null when its shape is not a code's. */
function candidateCode(raw: string): string | null {
  const groups = raw.split(/[ -]/);
  if (groups.length === 2) {
    const [a, b] = groups as [string, string];
    // "123 456" and "1234-5678" are codes printed in groups; "555-1234" is a phone number.
    return a.length === b.length ? a + b : null;
  }
  if (/^\d+$/.test(raw)) return raw;
  // Letters and digits mixed: upper-case words ("HTML", "CODE") are not codes, and neither is a
  // word followed by a number ("SAVE20", "WEEKLY2024"), the shape of promotion codes.
  return /\d/.test(raw) && /[A-Z]/.test(raw) && !/^[A-Z]{3,}\d{1,4}$/.test(raw) ? raw : null;
}

/** Part of a longer number, an amount, an id after '#', an e-mail address, a path. */
function partOfSomethingElse(text: string, start: number, end: number): boolean {
  const prev = text[start - 1] ?? '';
  const prev2 = text[start - 2] ?? '';
  const next = text[end] ?? '';
  const next2 = text[end + 1] ?? '';
  if ('#$€£¥₹/\\+=@&%_~|'.includes(prev) && prev !== '') return true;
  if ('/\\@%€$£¥_~|'.includes(next) && next !== '') return true;
  // Joined to another number by a separator: phone numbers, dates, times, thousands, decimals.
  if (' .,:-/()'.includes(prev) && prev !== '' && /\d/.test(prev2)) return true;
  if (' .,:-/()'.includes(next) && next !== '' && /\d/.test(next2)) return true;
  if (prev === '-' || (next === '-' && /[\p{L}\p{N}]/u.test(next2))) return true;
  if (prev === '(' || next === ')') return true;
  // A US zip code after its state ("CA 94107").
  if (end - start === 5 && /(?:^|[^\p{L}])[A-Z]{2} $/u.test(text.slice(Math.max(0, start - 4), start))) return true;
  if (CURRENCY_BEFORE.test(text.slice(Math.max(0, start - 5), start))) return true;
  if (CURRENCY_AFTER.test(text.slice(end, end + 9))) return true;
  return false;
}
