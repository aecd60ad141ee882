// data.extracted of an email event (design.md, "Inbound email"): one-time codes, classified
// links and the reply text, read from the parsed message. Pure and bounded: each body is cut to
// its first MAX_SCANNED_CHARS characters before any scan, and every scan is linear, so a huge or
// hostile message costs the same small, bounded time. Mail content is untrusted input: nothing in
// it is followed, fetched or rendered.
import { htmlToText } from './html-text.js';
import { type ExtractedLink, findLinks } from './links.js';
import { findOtpCodes } from './otp-codes.js';
import { replyText, replyTextFromHtml } from './reply-text.js';

export interface ExtractedContent {
  otp_codes: string[];
  links: ExtractedLink[];
  reply_text: string | null;
}

/** Characters of each body (text, html) that extraction reads: 256 Ki. */
export const MAX_SCANNED_CHARS = 256 * 1024;

export interface ExtractionInput {
  subject: string | null;
  text: string | null;
  html: string | null;
  /** Lower-cased header names -> values, as in data.headers. */
  headers: Readonly<Record<string, string>>;
}

export function extractContent(input: ExtractionInput): ExtractedContent {
  const text = input.text === null ? null : input.text.slice(0, MAX_SCANNED_CHARS);
  const html = input.html === null ? null : input.html.slice(0, MAX_SCANNED_CHARS);
  const fromHtml = html === null ? null : htmlToText(html);
  // The text part is what the sender wrote for text readers; the HTML's text stands in without one.
  const bodyText = text ?? fromHtml?.text ?? '';
  const subject = (input.subject ?? '').slice(0, 1000);
  let otpCodes = findOtpCodes(`${subject}\n${bodyText}`);
  if (otpCodes.length === 0 && text !== null && fromHtml !== null) otpCodes = findOtpCodes(fromHtml.text);
  const listUnsubscribe = Object.hasOwn(input.headers, 'list-unsubscribe') ? input.headers['list-unsubscribe'] : undefined;
  const links = findLinks({ text: text ?? fromHtml?.text ?? '', anchors: fromHtml?.anchors ?? [], listUnsubscribe });
  return {
    otp_codes: otpCodes,
    links,
    reply_text: text !== null ? replyText(text) : html !== null ? replyTextFromHtml(html) : null,
  };
}
