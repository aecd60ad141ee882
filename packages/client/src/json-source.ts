// The service's JSON text, kept beside the values parsed from it. JSON.parse turns 12345678901234567890
// into 12345678901234567000 (a double), so a client that re-serialises what it parsed changes the
// numbers a sender wrote. The CLI prints the text as received instead: these helpers cut a member or
// an array element out of a response's text and re-indent it, without ever parsing a number. Each is
// one linear pass over the text.

const sources = new WeakMap<object, string>();

/** Remembers that `value` was parsed from `text`. */
export function rememberSource(value: unknown, text: string): void {
  if (value !== null && typeof value === 'object') sources.set(value, text);
}

/** The JSON text `value` was parsed from, when it came from the service. */
export function sourceOf(value: unknown): string | undefined {
  return value !== null && typeof value === 'object' ? sources.get(value) : undefined;
}

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

function skipSpace(text: string, i: number): number {
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  return i;
}

/** The index just after the string whose opening quote is at `i`. */
function endOfString(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === 0x5c) j++;
    else if (c === 0x22) return j + 1;
  }
  throw new SyntaxError('unterminated string in JSON text');
}

/** The index just after the JSON value that starts at `i` (no leading space). */
function endOfValue(text: string, i: number): number {
  const c = text[i];
  if (c === '"') return endOfString(text, i);
  if (c === '{' || c === '[') {
    let depth = 0;
    for (let j = i; j < text.length; j++) {
      const d = text[j];
      if (d === '"') j = endOfString(text, j) - 1;
      else if (d === '{' || d === '[') depth++;
      else if (d === '}' || d === ']') {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    throw new SyntaxError('unbalanced JSON text');
  }
  let j = i;
  while (j < text.length && !',}] \n\r\t'.includes(text[j]!)) j++;
  return j;
}

/** The texts of a JSON object's members, by key (the text must be an object). */
export function memberTexts(text: string): Map<string, string> {
  const out = new Map<string, string>();
  let i = skipSpace(text, 0);
  if (text[i] !== '{') throw new SyntaxError('not a JSON object');
  i = skipSpace(text, i + 1);
  if (text[i] === '}') return out;
  for (;;) {
    const keyEnd = endOfString(text, i);
    const key = JSON.parse(text.slice(i, keyEnd)) as string;
    i = skipSpace(text, keyEnd);
    i = skipSpace(text, i + 1); // the colon
    const end = endOfValue(text, i);
    out.set(key, text.slice(i, end));
    i = skipSpace(text, end);
    if (text[i] === '}') return out;
    i = skipSpace(text, i + 1); // the comma
  }
}

/** The texts of a JSON array's elements, in order (the text must be an array). */
export function elementTexts(text: string): string[] {
  const out: string[] = [];
  let i = skipSpace(text, 0);
  if (text[i] !== '[') throw new SyntaxError('not a JSON array');
  i = skipSpace(text, i + 1);
  if (text[i] === ']') return out;
  for (;;) {
    const end = endOfValue(text, i);
    out.push(text.slice(i, end));
    i = skipSpace(text, end);
    if (text[i] === ']') return out;
    i = skipSpace(text, i + 1);
  }
}

/** `text` indented by two spaces a level, like JSON.stringify(value, null, 2), with every token as written. */
export function indentJson(text: string): string {
  let out = '';
  let depth = 0;
  const newline = () => `\n${'  '.repeat(depth)}`;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') {
      const end = endOfString(text, i);
      out += text.slice(i, end);
      i = end - 1;
    } else if (c === '{' || c === '[') {
      const next = skipSpace(text, i + 1);
      if (text[next] === (c === '{' ? '}' : ']')) {
        out += c === '{' ? '{}' : '[]';
        i = next;
      } else {
        depth++;
        out += c + newline();
      }
    } else if (c === '}' || c === ']') {
      depth--;
      out += newline() + c;
    } else if (c === ',') out += `,${newline()}`;
    else if (c === ':') out += ': ';
    else if (!isSpace(c.charCodeAt(0))) out += c;
  }
  return out;
}
