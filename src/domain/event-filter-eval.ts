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
import type { EventRecord } from './model.js';

/** A stored JSON text parsed once for every filter that looks into it (records are shared and never change). */
const parsed = new WeakMap<EventRecord, { data?: unknown; metadata?: unknown }>();
const MISSING = Symbol('missing');

function jsonOf(e: EventRecord, root: 'data' | 'metadata'): unknown {
  let entry = parsed.get(e);
  if (entry === undefined) parsed.set(e, (entry = {}));
  if (!(root in entry)) {
    const text = root === 'data' ? e.data : e.metadata;
    let v: unknown = MISSING;
    if (text !== null) {
      try {
        v = JSON.parse(text);
      } catch {
        v = MISSING;
      }
    }
    entry[root] = v;
  }
  return entry[root];
}

/** The value at `path` below `root`, or MISSING: an array takes index segments only, an object its own keys. */
function valueAt(root: unknown, path: readonly string[]): unknown {
  let v = root;
  for (const key of path) {
    if (v === null || typeof v !== 'object') return MISSING;
    if (Array.isArray(v)) {
      if (!isIndex(key) || Number(key) >= v.length) return MISSING;
      v = v[Number(key)];
    } else {
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

function jsonConditionHolds(v: unknown, m: MatchCondition): boolean {
  if (v === MISSING) return false;
  const n = matchNumber(m.value);
  if (Array.isArray(v)) {
    const end = Math.min(v.length, MAX_MATCH_ARRAY_MEMBERS);
    for (let i = 0; i < end; i++) if (scalarEquals(v[i], m.value, n)) return true;
    return false;
  }
  return scalarEquals(v, m.value, n);
}

function conditionHolds(e: EventRecord, m: MatchCondition): boolean {
  switch (m.root) {
    case 'type':
    case 'source':
    case 'id':
      return m.path.length === 0 && e[m.root] === m.value;
    case 'address_id':
      return m.path.length === 0 && e.addressId === m.value;
    case 'sequence': {
      const n = matchNumber(m.value);
      return m.path.length === 0 && n !== null && Number.isSafeInteger(n) && e.sequence === n;
    }
    case 'dedupe_key':
      return m.path.length === 0 && e.dedupeKey !== null && (e.dedupeKey === m.value || e.dedupeKey === emailDedupeKey(m.value));
    case 'data':
    case 'metadata':
      return jsonConditionHolds(valueAt(jsonOf(e, m.root), m.path), m);
  }
}

/** Whether the event passes the filter: its state, one of its types (if any), and every match condition. */
export function eventPasses(e: EventRecord, f: EventFilter): boolean {
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
    case 'all':
      break;
  }
  if (f.types.length > 0 && !f.types.some((t) => (t.prefix ? e.type.startsWith(t.text) : e.type === t.text))) return false;
  for (const m of f.match) if (!conditionHolds(e, m)) return false;
  return true;
}
