// The new text of a mail: data.extracted.reply_text (design.md, "Inbound email"). The text
// part with the quoted history and the signature removed:
// - everything from the first quote header on: "On … wrote:" (also split over two lines, and
//   "Am … schrieb …:", "Le … a écrit :", "El … escribió:", "在 … 写道："), "-----Original Message-----"
//   and its translations, an Outlook header block ("From:" then "Sent:"/"Date:" within a few lines,
//   "Von:"/"Gesendet:", "De :"/"Envoyé :", "De:"/"Enviado:"), a "____" rule followed by such a block;
// - every line quoted with ">" (inline replies keep their own lines);
// - everything from the signature delimiter "-- " on, and the mobile footers ("Sent from my
//   iPhone", "Get Outlook for iOS", "Von meinem iPhone gesendet", …).
// Line-based and linear: each line is tested against anchored patterns of bounded length.
import { htmlToText } from './html-text.js';

const QUOTE_HEADER_RES: readonly RegExp[] = [
  /^on\b.{0,300}\bwrote:?$/i,
  /^am\b.{0,300}\bschrieb\b.{0,300}:$/i,
  /^le\b.{0,300}\ba écrit\s?:$/i,
  /^el\b.{0,300}\bescribió:?$/i,
  /^在.{0,300}写道[:：]?$/,
  /^.{0,300}\d{4}年\d{1,2}月\d{1,2}日.{0,300}[:：]$/,
  /^-{3,}\s*(?:original message|ursprüngliche nachricht|message d'origine|mensaje original|forwarded message|原始邮件)\s*-{3,}$/i,
  /^-{5,}\s*(?:original|forwarded)\b.{0,40}$/i,
];
/** The first line of an Outlook header block, and what must follow it within a few lines. */
const OUTLOOK_FROM_RE = /^\*?(?:from|von|de|da|van|差出人|发件人)\s?:\*?\s/i;
const OUTLOOK_NEXT_RE =
  /^\*?(?:sent|date|gesendet|datum|envoyé|enviado|fecha|inviato|verzonden|送信日時|发送时间|to|an|à|para|a|subject|betreff|objet|asunto)\s?:/i;
const SIGNATURE_RE = /^(?:-- ?|—|__)$/;
const MOBILE_FOOTER_RE =
  /^(?:sent from my \w[\w ]{0,30}|sent from (?:outlook|mail|yahoo mail|gmail)\b.{0,40}|get outlook for \w+.{0,20}|von meinem \w[\w ]{0,30} gesendet|envoyé de mon \w[\w ]{0,30}|enviado desde mi \w[\w ]{0,30}|iphoneから送信|从我的iphone发送)$/i;

const MAX_LINE = 1000;
const MAX_HEADER_LINE = 400;

/** The reply text of a plain-text body; null when nothing is left. */
export function replyText(text: string): string | null {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const kept: string[] = [];
  let hasContent = false;
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] ?? '').slice(0, MAX_LINE).trim();
    if (isQuoteStart(lines, i)) break;
    if (hasContent && (SIGNATURE_RE.test(signatureCandidate(lines[i] ?? '')) || MOBILE_FOOTER_RE.test(line))) break;
    if (line.startsWith('>')) continue;
    kept.push(line);
    if (line !== '') hasContent = true;
  }
  const result = kept
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return result === '' ? null : result;
}

/**
 * A line as the signature test reads it: trailing white space folded to one space ("-- " stays the
 * delimiter), leading white space dropped. trimEnd, not /\s+$/: V8 retries that regex from every
 * white-space character of a run, so a 250 KB line of spaces ending in a letter took a minute.
 */
function signatureCandidate(line: string): string {
  const trimmed = line.trimEnd();
  return (trimmed.length < line.length ? `${trimmed} ` : trimmed).trimStart();
}

/** The reply text of an HTML body: the quoted part (Gmail, Outlook, blockquote) cut before converting. */
export function replyTextFromHtml(html: string): string | null {
  const cut = html.search(
    /<div[^>]{0,200}class=["']?[^"'>]{0,100}gmail_quote|<blockquote\b|<div[^>]{0,100}id=["']?(?:divRplyFwdMsg|appendonsend)|<hr[^>]{0,100}id=["']?stopSpelling/i,
  );
  return replyText(htmlToText(cut === -1 ? html : html.slice(0, cut)).text);
}

function isQuoteStart(lines: readonly string[], i: number): boolean {
  const line = (lines[i] ?? '').slice(0, MAX_LINE).trim();
  // Quote headers are short lines; long ones are not tested (bounded work per line).
  if (line === '' || line.length > MAX_HEADER_LINE) return false;
  if (QUOTE_HEADER_RES.some((re) => re.test(line))) return true;
  // "On Tue, 1 Oct 2024 at 10:00, Alice <alice@example.org>\nwrote:" (a client wrapped the line).
  const next = (lines[i + 1] ?? '').slice(0, MAX_LINE).trim();
  if (/^(?:on|am|le|el)\b/i.test(line) && /^(?:.{0,200}\s)?(?:wrote|schrieb|a écrit|escribió)\s?:?$/i.test(next)) return true;
  if (/^_{10,}$/.test(line)) return OUTLOOK_FROM_RE.test((lines[i + 1] ?? '').trim()) || OUTLOOK_FROM_RE.test((lines[i + 2] ?? '').trim());
  if (OUTLOOK_FROM_RE.test(line)) {
    for (let j = i + 1; j <= i + 4 && j < lines.length; j++) {
      if (OUTLOOK_NEXT_RE.test((lines[j] ?? '').trim())) return true;
    }
  }
  return false;
}
