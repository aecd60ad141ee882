// Server-side filters on reads (design.md, "Reading without loss"): `type` (exact, or a prefix ending in `.*`;
// repeatable, any of them), `match` (repeatable `path=value`, all of them, with event-match.ts's
// rule) and `state`. Parsed and checked here, once, for every way in (HTTP, SSE, MCP, claims);
// the stores evaluate them in SQL (src/storage/event-filter-sql.ts), examining a bounded number
// of events per read (SCAN_EVENTS, SCAN_BYTES): no user input ever becomes a regular expression
// or a LIKE pattern, so no filter can make a read slower than a scan of that many events.
import { ApiError } from './errors.js';

/** Not held in quarantine (model.ts isHeld, as SQL): never quarantined, or released. */
const NOT_HELD = '(quarantined_at IS NULL OR released_at IS NOT NULL)';

/**
 * Which events a `state` keeps, as a predicate over the events table (the same columns in both
 * stores). Adding a state is adding a line here (claims: `dead: { …, where: 'dead_at IS NOT NULL' }`).
 * Every state but `quarantined` and `all` leaves out the events held in quarantine (design.md,
 * "Sender policy and quarantine"): only those two ever show an event a sender policy refused.
 */
export const EVENT_STATES = {
  unacked: { description: 'not acknowledged', where: `acknowledged_at IS NULL AND ${NOT_HELD}` },
  acked: { description: 'acknowledged', where: `acknowledged_at IS NOT NULL AND ${NOT_HELD}` },
  dead: { description: 'claimed max_deliveries times without an ack, or nacked as dead; never claimed again', where: `dead_at IS NOT NULL AND ${NOT_HELD}` },
  quarantined: {
    description: 'stored quarantined because it failed the sender policy, and neither released nor acknowledged yet',
    where: 'quarantined_at IS NOT NULL AND released_at IS NULL AND acknowledged_at IS NULL',
  },
  all: { description: 'every event, quarantined ones included', where: null },
} as const satisfies Record<string, { description: string; where: string | null }>;

export type EventState = keyof typeof EVENT_STATES;
export const EVENT_STATE_NAMES = Object.keys(EVENT_STATES) as EventState[];

/**
 * The state of a read that names none: every event except those held in quarantine. Not a value a
 * client sends; `state=all` is the way to see everything.
 */
export const DEFAULT_STATE = { description: 'every event except those held in quarantine (the default)', where: NOT_HELD } as const;
export type FilterState = EventState | 'default';

/** The SQL predicate of a filter's state (null: every event). */
export const stateWhere = (s: FilterState): string | null => (s === 'default' ? DEFAULT_STATE.where : EVENT_STATES[s].where);

/** What the `state` parameter says, for the documents: each state, and the default when none is given. */
export const STATE_HELP = `${EVENT_STATE_NAMES.join(', ')}; without state: ${DEFAULT_STATE.description}`;

/** At most this many `match` conditions (and as many `type` patterns) in one filter. */
export const MAX_MATCH_CONDITIONS = 20;
export const MAX_TYPE_PATTERNS = 20;
/** A match path: at most this many characters and dot-separated segments. */
export const MAX_MATCH_PATH_CHARS = 256;
export const MAX_MATCH_PATH_SEGMENTS = 16;
/** A match path's segments that are array indexes (digits) each double the SQL SQLite runs: bounded. */
export const MAX_MATCH_INDEX_SEGMENTS = 3;
export const MAX_MATCH_VALUE_CHARS = 1000;
/**
 * An array at a match path matches when one of its first MAX_MATCH_ARRAY_MEMBERS members equals the
 * value (in SQL, in memory and in the clients alike): a condition never walks a whole array of
 * 100,000 members per event. Defined with the clients' rule (event-match.ts), which is copied alone.
 */
export { MAX_MATCH_ARRAY_MEMBERS } from './event-match.js';
/**
 * What one filter may cost, in JSON look-ups per event examined: each match condition into data or
 * metadata costs its path segments times 2 per numeric segment (a digit is tried as an array index
 * and as a key), any other condition 1. The largest filters (20 conditions, 3 numeric segments
 * each) cost a store about 20 ms per event; this keeps one read of a filter near a millisecond.
 */
export const MAX_FILTER_COST = 256;
export const MAX_TYPE_CHARS = 256;

/**
 * One filtered read examines at most this many events after the cursor, and stops earlier once the
 * events examined hold SCAN_BYTES of stored JSON (always at least one). Reaching either bound
 * answers what matched so far with has_more: true and next_cursor = the last event examined.
 */
export const SCAN_EVENTS = 10_000;
export const SCAN_BYTES = 16 * 1024 * 1024;

/** The event's fields a match path may start with; `data`, `metadata` and `trust` take a path below them. */
export const MATCH_ROOTS = ['data', 'metadata', 'trust', 'type', 'source', 'id', 'address_id', 'sequence', 'dedupe_key'] as const;
export type MatchRoot = (typeof MATCH_ROOTS)[number];

export interface MatchCondition {
  root: MatchRoot;
  /** The path below the root (empty for a top-level field). */
  path: string[];
  /** The expected value's text: a JSON string equal to it, or a scalar whose JSON text is it, matches. */
  value: string;
}

export interface TypePattern {
  /** The type itself, or the prefix before `*` (`github.` for `github.*`). */
  text: string;
  prefix: boolean;
}

export interface EventFilter {
  types: TypePattern[];
  match: MatchCondition[];
  state: FilterState;
}

/** Filter input as it arrives: query strings (one or repeated) or MCP's JSON. */
export interface FilterInput {
  type?: string | readonly string[] | undefined;
  /** `path=value` texts, or (MCP) an object of path → value, where JSON true/numbers/null stand for their text. */
  match?: string | readonly string[] | Readonly<Record<string, unknown>> | undefined;
  state?: string | undefined;
}

const NO_FILTER: EventFilter = Object.freeze({ types: [], match: [], state: 'default' as FilterState });
const ALL_EVENTS: EventFilter = Object.freeze({ types: [], match: [], state: 'all' as FilterState });

/**
 * True when the filter keeps every event but, unless its state is `all`, the ones held in quarantine:
 * then a read takes the unfiltered path, which leaves those out itself (return-address-service.ts).
 */
export function isEmptyFilter(f: EventFilter): boolean {
  return f.types.length === 0 && f.match.length === 0 && (f.state === 'default' || f.state === 'all');
}

const list = (v: string | readonly string[] | undefined): readonly string[] => (v === undefined ? [] : typeof v === 'string' ? [v] : v);

const bad = (param: string, what: string) => new ApiError('invalid_request', `Invalid ${param} '${what}`);

/**
 * Parses and checks a filter; 400 invalid_request naming the parameter and the fix. `param` says
 * how the caller names things in messages ("query parameter" for HTTP, "argument" for MCP).
 */
export function parseEventFilter(input: FilterInput, param = 'query parameter'): EventFilter {
  const types = list(input.type);
  if (types.length > MAX_TYPE_PATTERNS) throw bad(param, `type': at most ${MAX_TYPE_PATTERNS} types may be given; send fewer.`);
  const patterns = types.map((t): TypePattern => {
    if (t.length === 0 || t.length > MAX_TYPE_CHARS || t.includes('\u0000')) {
      throw bad(
        param,
        `type': must be 1-${MAX_TYPE_CHARS} characters without U+0000: an event type (stripe.invoice.paid), or a prefix ending in .* (stripe.*).`,
      );
    }
    if (t === '*') throw bad(param, `type': '*' alone would keep every event: leave type out instead, or give a prefix such as stripe.*.`);
    const prefix = t.endsWith('.*');
    const text = prefix ? t.slice(0, -1) : t;
    if (text.includes('*')) throw bad(param, `type': '${t}' holds a * that is not the final .* of a prefix: give an exact type, or a prefix such as github.*.`);
    return { text, prefix };
  });

  const match: MatchCondition[] = [];
  const m = input.match;
  const pairs: [string, string][] = [];
  if (typeof m === 'string' || Array.isArray(m)) {
    for (const text of list(m as string | readonly string[])) {
      const i = text.indexOf('=');
      if (i < 0) throw bad(param, `match': '${clip(text)}' has no '=': send path=value, e.g. data.from.address=a@b.c.`);
      pairs.push([text.slice(0, i), text.slice(i + 1)]);
    }
  } else if (m !== undefined) {
    for (const [path, v] of Object.entries(m)) {
      if (v !== null && typeof v === 'object')
        throw bad(param, `match': the value of '${clip(path)}' is an object or array; give a string, number, boolean or null.`);
      pairs.push([path, typeof v === 'string' ? v : JSON.stringify(v)]);
    }
  }
  if (pairs.length > MAX_MATCH_CONDITIONS) throw bad(param, `match': at most ${MAX_MATCH_CONDITIONS} conditions may be given; send fewer.`);
  for (const [path, value] of pairs) match.push(parseCondition(path, value, param));
  const cost = filterCost(match);
  if (cost > MAX_FILTER_COST) {
    throw bad(
      param,
      `match': these conditions cost ${cost} JSON look-ups per event, more than ${MAX_FILTER_COST} (each condition into data or metadata costs ` +
        'its path segments, doubled for every numeric segment): send fewer conditions, shorter paths or fewer numeric segments.',
    );
  }

  const state = input.state ?? 'default';
  if (state !== 'default' && !Object.hasOwn(EVENT_STATES, state)) {
    throw bad(
      param,
      `state': must be one of ${EVENT_STATE_NAMES.join(', ')} (${EVENT_STATE_NAMES.map((s) => `${s}: ${EVENT_STATES[s].description}`).join('; ')}), ` +
        `or left out for ${DEFAULT_STATE.description}.`,
    );
  }
  if (patterns.length === 0 && match.length === 0)
    return state === 'all' ? ALL_EVENTS : state === 'default' ? NO_FILTER : { types: [], match: [], state: state as FilterState };
  return { types: patterns, match, state: state as FilterState };
}

function parseCondition(path: string, value: string, param: string): MatchCondition {
  if (path.length === 0) throw bad(param, `match': the path before '=' is empty: send path=value, e.g. data.from.address=a@b.c.`);
  if (path.length > MAX_MATCH_PATH_CHARS) throw bad(param, `match': the path '${clip(path)}' is longer than ${MAX_MATCH_PATH_CHARS} characters.`);
  if (value.length > MAX_MATCH_VALUE_CHARS) throw bad(param, `match': the value for '${clip(path)}' is longer than ${MAX_MATCH_VALUE_CHARS} characters.`);
  if (path.includes('\u0000') || value.includes('\u0000')) throw bad(param, `match': U+0000 cannot appear in a path or a value.`);
  const segments = path.split('.');
  if (segments.some((s) => s === '')) throw bad(param, `match': the path '${clip(path)}' has an empty segment: write dotted keys such as data.from.address.`);
  if (segments.length > MAX_MATCH_PATH_SEGMENTS) throw bad(param, `match': the path '${clip(path)}' has more than ${MAX_MATCH_PATH_SEGMENTS} segments.`);
  const [root, ...rest] = segments as [string, ...string[]];
  if (!(MATCH_ROOTS as readonly string[]).includes(root)) {
    throw bad(param, `match': the path '${clip(path)}' must start with one of ${MATCH_ROOTS.join(', ')} (e.g. data.from.address).`);
  }
  if (rest.filter(isIndex).length > MAX_MATCH_INDEX_SEGMENTS) {
    throw bad(param, `match': the path '${clip(path)}' has more than ${MAX_MATCH_INDEX_SEGMENTS} numeric (array index) segments.`);
  }
  return { root: root as MatchRoot, path: rest, value };
}

/** The cost of a filter's match conditions (MAX_FILTER_COST): JSON look-ups per event examined. */
export function filterCost(match: readonly MatchCondition[]): number {
  let cost = 0;
  for (const m of match) cost += m.root === 'data' || m.root === 'metadata' ? Math.max(1, m.path.length) * 2 ** m.path.filter(isIndex).length : 1;
  return cost;
}

/** A segment that may index an array (as in event-match.ts: `data.links.0.url`). */
export const isIndex = (segment: string): boolean => /^(0|[1-9][0-9]{0,8})$/.test(segment);

/**
 * The number a match value stands for, when a JSON number at the path can equal it: its text must
 * be the number's own JSON text (String(n)), as in event-match.ts (`data.n=7` matches 7, not `07`).
 */
export function matchNumber(value: string): number | null {
  if (value === '' || value.trim() !== value) return null;
  const n = Number(value);
  return Number.isFinite(n) && String(n) === value ? n : null;
}

const clip = (s: string) => (s.length > 60 ? `${s.slice(0, 60)}…` : s);
