// A checked EventFilter (event-filter.ts) evaluated in memory against a stored event: the same rule
// the stores run as SQL (storage/event-filter-sql.ts), so a read may take either way and answer the
// same events (design.md, "The wakeup hub and followers": the waiters of an address share one read
// of its new events and each filter runs here, not as a rescan per waiter). The property test
// (test/storage/event-filter.test.ts) holds the two to one meaning.
//
// The rule: a JSON string equal to the value; a number whose own JSON text is the value
// (matchNumber); true, false or null whose JSON text is the value; or an array at the path holding
// such a member among its first MAX_MATCH_ARRAY_MEMBERS. Objects never match, nor does a missing
// path. A digit segment indexes an array, or names an object's key, as the value at it has.
import { emailDedupeKey } from './dedupe-key.js';
import { type EventFilter, isIndex, MAX_MATCH_ARRAY_MEMBERS, type MatchCondition, matchNumber } from './event-filter.js';
import { type EventRecord, isHeld } from './model.js';

/**
 * Stored JSON parsed once for every filter and every reader that looks into it, by event id: an
 * event's data and metadata never change, and a store may hand each reader its own record of it
 * (PostgreSQL). Bounded by the text parsed (PARSED_CACHE_CHARS), oldest first out.
 */
const parsed = new Map<string, { data?: unknown; metadata?: unknown; trust?: unknown; chars: number }>();
const PARSED_CACHE_CHARS = 32 * 1024 * 1024;
let parsedChars = 0;
const MISSING = Symbol('missing');

function jsonOf(e: EventRecord, root: 'data' | 'metadata' | 'trust'): unknown {
  let entry = parsed.get(e.id);
  if (entry === undefined) {
    entry = { chars: 0 };
    parsed.set(e.id, entry);
  }
  if (!(root in entry)) {
    const text = root === 'data' ? e.data : root === 'metadata' ? e.metadata : e.trust;
    let v: unknown = MISSING;
    if (text !== null) {
      try {
        v = JSON.parse(text);
      } catch {
        v = MISSING;
      }
      entry.chars += text.length;
      parsedChars += text.length;
    }
    entry[root] = v;
    for (const [id, old] of parsed) {
      if (parsedChars <= PARSED_CACHE_CHARS || old === entry) break;
      parsed.delete(id);
      parsedChars -= old.chars;
    }
  }
  return entry[root];
}

/** A condition as evaluated: its path with each segment's array index (or -1) worked out once, and its value as a number. */
interface CompiledCondition {
  root: MatchCondition['root'];
  path: readonly string[];
  indexes: readonly number[];
  value: string;
  n: number | null;
}

interface CompiledFilter {
  /** The filter's text: waiters with the same filter share each event's answer. */
  key: string;
  conditions: CompiledCondition[];
}

/** Filters are parsed once per request and never change: each is compiled once. */
const compiled = new WeakMap<EventFilter, CompiledFilter>();
/** Each event's answer per filter text, shared by every waiter holding that filter (1,000 polls of one filter: one evaluation). */
const answers = new WeakMap<EventRecord, Map<string, boolean>>();
/** Answers kept per event: distinct filters beyond it are evaluated again, not remembered. */
const ANSWERS_PER_EVENT = 256;

function compile(f: EventFilter): CompiledFilter {
  let c = compiled.get(f);
  if (c === undefined) {
    c = {
      key: JSON.stringify(f),
      conditions: f.match.map((m) => ({
        root: m.root,
        path: m.path,
        indexes: m.path.map((s) => (isIndex(s) ? Number(s) : -1)),
        value: m.value,
        n: matchNumber(m.value),
      })),
    };
    compiled.set(f, c);
  }
  return c;
}

/** The value at the condition's path below `root`, or MISSING: an array takes index segments only, an object its own keys. */
function valueAt(root: unknown, m: CompiledCondition): unknown {
  let v = root;
  for (let i = 0; i < m.path.length; i++) {
    if (v === null || typeof v !== 'object') return MISSING;
    if (Array.isArray(v)) {
      const index = m.indexes[i]!;
      if (index < 0 || index >= v.length) return MISSING;
      v = v[index];
    } else {
      const key = m.path[i]!;
      if (!Object.hasOwn(v, key)) return MISSING;
      v = (v as Record<string, unknown>)[key];
    }
  }
  return v;
}

function scalarEquals(v: unknown, value: string, n: number | null): boolean {
  if (typeof v === 'string') return v === value;
  if (typeof v === 'number') return n !== null && v === n;
  if (v === true || v === false || v === null) return String(v) === value;
  return false;
}

function jsonConditionHolds(v: unknown, m: CompiledCondition): boolean {
  if (v === MISSING) return false;
  if (Array.isArray(v)) {
    const end = Math.min(v.length, MAX_MATCH_ARRAY_MEMBERS);
    for (let i = 0; i < end; i++) if (scalarEquals(v[i], m.value, m.n)) return true;
    return false;
  }
  return scalarEquals(v, m.value, m.n);
}

function conditionHolds(e: EventRecord, m: CompiledCondition): boolean {
  switch (m.root) {
    case 'type':
    case 'source':
    case 'id':
      return m.path.length === 0 && e[m.root] === m.value;
    case 'address_id':
      return m.path.length === 0 && e.addressId === m.value;
    case 'sequence':
      return m.path.length === 0 && m.n !== null && Number.isSafeInteger(m.n) && e.sequence === m.n;
    case 'dedupe_key':
      return m.path.length === 0 && e.dedupeKey !== null && (e.dedupeKey === m.value || e.dedupeKey === emailDedupeKey(m.value));
    case 'data':
    case 'metadata':
    case 'trust':
      return jsonConditionHolds(valueAt(jsonOf(e, m.root), m), m);
  }
}

function evaluate(e: EventRecord, f: EventFilter, c: CompiledFilter): boolean {
  // EVENT_STATES' predicates (event-filter.ts): every state but quarantined and all leaves out the
  // events held in quarantine.
  if (f.state === 'quarantined') {
    if (!isHeld(e) || e.acknowledgedAt !== null) return false;
  } else if (f.state !== 'all') {
    if (isHeld(e)) return false;
    switch (f.state) {
      case 'unacked':
        if (e.acknowledgedAt !== null) return false;
        break;
      case 'acked':
        if (e.acknowledgedAt === null) return false;
        break;
      case 'dead':
        if (e.deadAt === undefined || e.deadAt === null) return false;
        break;
      case 'default':
        break;
    }
  }
  if (f.types.length > 0 && !f.types.some((t) => (t.prefix ? e.type.startsWith(t.text) : e.type === t.text))) return false;
  for (const m of c.conditions) if (!conditionHolds(e, m)) return false;
  return true;
}

/** Whether the event passes the filter: its state, one of its types (if any), and every match condition. */
export function eventPasses(e: EventRecord, f: EventFilter): boolean {
  const c = compile(f);
  let known = answers.get(e);
  const answer = known?.get(c.key);
  if (answer !== undefined) return answer;
  const passes = evaluate(e, f, c);
  if (known === undefined) answers.set(e, (known = new Map()));
  if (known.size < ANSWERS_PER_EVENT) known.set(c.key, passes);
  return passes;
}
