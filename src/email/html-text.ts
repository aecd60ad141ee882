// HTML -> plain text and its links, for the extraction of data.extracted. Mail HTML is hostile
// input: this is a single forward scan (every search starts where the previous one ended), so the
// time is linear in the input, whatever its shape (unterminated tags, a million '<', no '>').
// Nothing is fetched or rendered: only text and href attributes are read.

export interface HtmlAnchor {
  /** The href attribute, entity-decoded, as written (any scheme; callers filter). */
  href: string;
  /** The anchor's visible text, whitespace collapsed. */
  text: string;
  /** The text just before the anchor on its line, after any previous anchor (at most 100 characters). */
  before: string;
}

export interface HtmlText {
  text: string;
  anchors: HtmlAnchor[];
}

/** Elements whose content is never visible text. */
const SKIPPED = new Set(['script', 'style', 'head', 'title', 'noscript', 'template', 'svg', 'xml']);
/** Elements that start a new line. */
const BLOCKS = new Set([
  'address',
  'article',
  'aside',
  'blockquote',
  'br',
  'center',
  'dd',
  'div',
  'dl',
  'dt',
  'footer',
  'form',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'header',
  'hr',
  'li',
  'main',
  'nav',
  'ol',
  'p',
  'pre',
  'section',
  'table',
  'tbody',
  'tfoot',
  'thead',
  'tr',
  'ul',
]);
/** Cells are separated by a space on their row. */
const CELLS = new Set(['td', 'th']);
/** At most this many anchors are kept. */
const MAX_ANCHORS = 500;

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  copy: '©',
  reg: '®',
  trade: '™',
  hellip: '…',
  mdash: '—',
  ndash: '–',
  lsquo: '‘',
  rsquo: '’',
  ldquo: '“',
  rdquo: '”',
  laquo: '«',
  raquo: '»',
  middot: '·',
  bull: '•',
  euro: '€',
  pound: '£',
  yen: '¥',
  cent: '¢',
  zwnj: '',
  zwj: '',
  shy: '',
  thinsp: ' ',
  ensp: ' ',
  emsp: ' ',
  eacute: 'é',
  egrave: 'è',
  agrave: 'à',
  aacute: 'á',
  ccedil: 'ç',
  ntilde: 'ñ',
  oacute: 'ó',
  iacute: 'í',
  uacute: 'ú',
  auml: 'ä',
  ouml: 'ö',
  uuml: 'ü',
  Auml: 'Ä',
  Ouml: 'Ö',
  Uuml: 'Ü',
  szlig: 'ß',
  ecirc: 'ê',
  ocirc: 'ô',
  iexcl: '¡',
  iquest: '¿',
};

/** `&amp;`, `&#39;`, `&#x2F;` and the common named entities; unknown ones stay as written. */
export function decodeEntities(s: string): string {
  if (!s.includes('&')) return s;
  return s.replace(/&(#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z]{2,8});?/g, (whole, body: string) => {
    if (body.startsWith('#')) {
      const code = body[1] === 'x' || body[1] === 'X' ? Number.parseInt(body.slice(2), 16) : Number.parseInt(body.slice(1), 10);
      return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : whole;
    }
    const named = Object.hasOwn(NAMED_ENTITIES, body) ? NAMED_ENTITIES[body] : undefined;
    return named ?? whole;
  });
}

const HREF_RE = /\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+))/i;
const TAG_NAME_RE = /^\/?([a-zA-Z][a-zA-Z0-9-]*)/;

/** Visible text (blocks on their own lines, blank runs collapsed) and the anchors with an href. */
export function htmlToText(html: string): HtmlText {
  const out: string[] = [];
  const anchors: HtmlAnchor[] = [];
  // The open anchor collects its own text: no re-reading of the output when it closes.
  let open: { href: string; parts: string[]; before: string } | null = null;
  // Text since the last line break or anchor end, kept short: what an anchor's words follow.
  let lead = '';
  const push = (s: string) => {
    out.push(s);
    open?.parts.push(s);
    const nl = s.lastIndexOf('\n');
    lead = (nl === -1 ? lead + s : s.slice(nl + 1)).slice(-100);
  };
  const closeAnchor = () => {
    if (open === null) return;
    if (anchors.length < MAX_ANCHORS) anchors.push({ href: open.href, text: collapse(open.parts.join('')), before: collapse(open.before) });
    open = null;
    lead = '';
  };

  let i = 0;
  const n = html.length;
  while (i < n) {
    const lt = html.indexOf('<', i);
    const textEnd = lt === -1 ? n : lt;
    if (textEnd > i) push(decodeEntities(html.slice(i, textEnd)).replace(/\s+/g, ' '));
    if (lt === -1) break;
    if (html.startsWith('<!--', lt)) {
      const end = html.indexOf('-->', lt + 4);
      if (end === -1) break;
      i = end + 3;
      continue;
    }
    const gt = html.indexOf('>', lt + 1);
    if (gt === -1) break; // an unterminated tag: the rest is not text
    const tag = html.slice(lt + 1, gt);
    i = gt + 1;
    const m = TAG_NAME_RE.exec(tag);
    if (!m) continue; // `<!DOCTYPE`, `<?xml`, stray '<'
    const name = (m[1] ?? '').toLowerCase();
    const closing = tag.startsWith('/');
    if (!closing && SKIPPED.has(name) && !tag.endsWith('/')) {
      // Skip to the matching end tag; without one, nothing after is visible.
      const endRe = new RegExp(`</${name}\\s*>`, 'gi');
      endRe.lastIndex = i;
      const end = endRe.exec(html);
      if (!end) break;
      i = end.index + end[0].length;
      continue;
    }
    if (name === 'a') {
      if (closing) {
        closeAnchor();
      } else {
        closeAnchor();
        const href = HREF_RE.exec(tag);
        const value = href ? (href[1] ?? href[2] ?? href[3] ?? '') : '';
        if (value !== '') open = { href: decodeEntities(value).trim(), parts: [], before: lead };
      }
      continue;
    }
    if (BLOCKS.has(name)) push('\n');
    else if (CELLS.has(name)) push(' ');
    else if (name === 'img' && !closing) {
      // An image's alt text is what a text reader sees (buttons are often images).
      const alt = /\balt\s*=\s*(?:"([^"]*)"|'([^']*)')/i.exec(tag);
      const value = alt ? (alt[1] ?? alt[2] ?? '') : '';
      if (value.trim() !== '') push(` ${decodeEntities(value).trim()} `);
    }
  }
  closeAnchor();
  return { text: tidyLines(out.join('')), anchors };
}

function collapse(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}

/** Each line trimmed, runs of blank lines reduced to one, no blank lines at the ends. */
export function tidyLines(s: string): string {
  const lines = s.split('\n').map((l) => l.replace(/[ \t\u00a0]+/g, ' ').trim());
  const kept: string[] = [];
  for (const line of lines) {
    if (line === '' && (kept.length === 0 || kept.at(-1) === '')) continue;
    kept.push(line);
  }
  while (kept.at(-1) === '') kept.pop();
  return kept.join('\n');
}
