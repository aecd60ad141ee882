// One rule for "is this the event I am waiting for", shared by the TypeScript client, the CLI, the
// Python module (which mirrors it) and MCP wait_for_event, so an agent gets the same answer
// whichever way it waits (design.md, "Agent toolkit and live view").

/** An array at a path matches by one of its first this many members (the service's filters: event-filter.ts). */
export const MAX_MATCH_ARRAY_MEMBERS = 100;

/**
 * Dotted path (`data.from.address`) to the expected value, compared as text; a JSON number, boolean
 * or null stands for its JSON text (`{ "data.ok": true }` is `data.ok=true`).
 */
export type EventMatch = Record<string, string | number | boolean | null>;

export interface EventFilter {
  /** Only an event of one of these types counts: exact, or a prefix ending in `.*` (`github.*`). */
  type?: string | readonly string[] | undefined;
  match?: EventMatch | undefined;
}

/** `pattern` is an exact type, or a prefix ending in `.*` (`stripe.*` takes stripe.invoice.paid, not stripe). */
export function typeMatches(type: unknown, pattern: string): boolean {
  if (typeof type !== 'string') return false;
  return pattern.endsWith('.*') ? type.startsWith(pattern.slice(0, -1)) : type === pattern;
}

/** Parses `path=value` pairs (the CLI's `--match`); the first `=` splits, so values may hold `=`. */
export function parseMatch(pairs: readonly string[]): EventMatch {
  const out: EventMatch = {};
  for (const pair of pairs) {
    const i = pair.indexOf('=');
    if (i <= 0) throw new TypeError(`match "${pair}" must look like path=value (e.g. data.from.address=a@b.c)`);
    out[pair.slice(0, i)] = pair.slice(i + 1);
  }
  return out;
}

/** The value at a dotted path, or undefined; array elements are addressed by index (`data.links.0.url`). */
export function valueAt(root: unknown, path: string): unknown {
  let v: unknown = root;
  for (const key of path.split('.')) {
    if (v === null || typeof v !== 'object' || !Object.hasOwn(v, key)) return undefined;
    v = (v as Record<string, unknown>)[key];
  }
  return v;
}

/**
 * Strings compare as they are; numbers, booleans and null as their JSON text (`data.n=3`,
 * `data.ok=true`); objects and arrays never equal a match value, and neither does a missing path.
 * A string value also matches when it is a member of an array at the path (`data.to=a@b.c`), one
 * of its first MAX_MATCH_ARRAY_MEMBERS, as the service's filters take them.
 */
function equalsText(v: unknown, expected: string): boolean {
  if (typeof v === 'string') return v === expected;
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return JSON.stringify(v) === expected;
  if (Array.isArray(v)) return v.slice(0, MAX_MATCH_ARRAY_MEMBERS).some((x) => !Array.isArray(x) && equalsText(x, expected));
  return false;
}

export function eventMatches(event: unknown, filter: EventFilter): boolean {
  if (filter.type !== undefined) {
    const types = typeof filter.type === 'string' ? [filter.type] : filter.type;
    if (types.length > 0 && !types.some((t) => typeMatches(valueAt(event, 'type'), t))) return false;
  }
  for (const [path, expected] of Object.entries(filter.match ?? {})) {
    if (!equalsText(valueAt(event, path), typeof expected === 'string' ? expected : JSON.stringify(expected))) return false;
  }
  return true;
}
