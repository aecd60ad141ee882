// The approval page (design.md, "Approvals"): plain HTML and one inline style sheet, no script at all,
// so it works without JavaScript and a strict CSP allows nothing else. GET only shows it; only its
// form's POST records an answer. Every piece of text from the approval or the request is escaped
// (text content and attribute values alike), so nothing from them can become markup.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ApprovalField, ApprovalRecord } from './approval-model.js';
import { LIMITS } from './approval-rules.js';

// Next to the compiled file in dist (scripts/copy-assets.mjs copies src/approvals/assets there).
const STYLE = readFileSync(new URL('./assets/approval.css', import.meta.url), 'utf8');
const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64');

/** Nothing but the one style sheet, by its hash; the form may post only to this origin; no framing. */
export const APPROVAL_PAGE_CSP = `default-src 'none'; style-src 'sha256-${STYLE_HASH}'; img-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`;

export const APPROVAL_PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': APPROVAL_PAGE_CSP,
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'x-robots-tag': 'noindex, nofollow',
} as const;

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => ENTITIES[c] as string);

export type PageState =
  | { kind: 'open'; error?: string; values?: Record<string, string>; reason?: string }
  | { kind: 'recorded'; option: string; label: string }
  | { kind: 'closed'; message: string };

export function renderApprovalPage(a: ApprovalRecord, state: PageState): string {
  let body = `<p class="kicker">Approval requested</p>\n<h1>${escapeHtml(a.question)}</h1>\n`;
  if (a.details !== null && a.details !== '') body += `<pre class="details">${escapeHtml(a.details)}</pre>\n`;
  if (state.kind === 'recorded') {
    body += `<p class="notice recorded" role="status">Your answer was recorded: <strong>${escapeHtml(state.label)}</strong>.</p>\n`;
  } else if (state.kind === 'closed') {
    body += `<p class="notice closed" role="status">${escapeHtml(state.message)}</p>\n`;
  } else {
    if (state.error) body += `<p class="notice error" role="alert">${escapeHtml(state.error)}</p>\n`;
    body += form(a, state.values ?? {}, state.reason ?? '');
  }
  body += `<p class="meta">Answers close ${escapeHtml(new Date(a.expiresAt).toUTCString())}.</p>`;
  return page(a.question, body);
}

/** The page for a URL that opens no approval (unknown id or wrong secret, indistinguishably). */
export function renderNotFoundPage(): string {
  return page(
    'Not found',
    "<h1>No approval at this link</h1>\n<p>Check that the whole link was copied. An approval's link works only until it is answered, cancelled or expires.</p>",
  );
}

function page(title: string, body: string): string {
  return (
    '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n<meta name="robots" content="noindex, nofollow">\n' +
    `<title>${escapeHtml(title.slice(0, 80))}</title>\n<style>${STYLE}</style>\n</head>\n<body>\n<main class="card">\n${body}\n</main>\n</body>\n</html>\n`
  );
}

function form(a: ApprovalRecord, values: Record<string, string>, reason: string): string {
  // No action attribute: the form posts to this very URL, so the secret is never written into the markup.
  let out =
    '<form method="post">\n' +
    // The first submit button is the one Enter in a text box would press: a disabled one, so that
    // only a click on an option's button answers.
    '<button type="submit" disabled hidden aria-hidden="true" tabindex="-1"></button>\n';
  a.fields.forEach((f, i) => {
    out += field(f, `f${i}`, values[f.name]);
  });
  out +=
    `<div class="field"><label for="reason">Reason <span class="opt">(optional)</span></label>` +
    `<textarea id="reason" name="reason" maxlength="${LIMITS.reason}" rows="2">${escapeHtml(reason)}</textarea></div>\n`;
  out += '<div class="options">\n';
  for (const o of a.options) out += `<button type="submit" name="option" value="${escapeHtml(o.id)}">${escapeHtml(o.label)}</button>\n`;
  return `${out}</div>\n</form>\n`;
}

function field(f: ApprovalField, id: string, value: string | undefined): string {
  const name = `field.${f.name}`;
  const label = `${escapeHtml(f.label)}${f.required ? ' <span class="req">(required)</span>' : ''}`;
  const v = value ?? '';
  switch (f.type) {
    case 'boolean':
      return `<div class="field"><label class="check"><input type="checkbox" id="${id}" name="${name}" value="on"${v ? ' checked' : ''}> ${label}</label></div>\n`;
    case 'textarea':
      return `<div class="field"><label for="${id}">${label}</label><textarea id="${id}" name="${name}" maxlength="${LIMITS.textarea}" rows="4">${escapeHtml(v)}</textarea></div>\n`;
    case 'select': {
      const opts = (f.choices ?? []).map((c) => `<option value="${escapeHtml(c)}"${c === v ? ' selected' : ''}>${escapeHtml(c)}</option>`).join('');
      return `<div class="field"><label for="${id}">${label}</label><select id="${id}" name="${name}"><option value="">Choose…</option>${opts}</select></div>\n`;
    }
    case 'number':
      return `<div class="field"><label for="${id}">${label}</label><input type="number" step="any" inputmode="decimal" id="${id}" name="${name}" value="${escapeHtml(v)}"></div>\n`;
    default:
      return `<div class="field"><label for="${id}">${label}</label><input type="text" id="${id}" name="${name}" maxlength="${LIMITS.text}" value="${escapeHtml(v)}"></div>\n`;
  }
}
