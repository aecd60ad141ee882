// A checked EventFilter (domain/event-filter.ts) as SQL over the events table, in either store's
// dialect, and the bounded scan both stores run with it. Every value is a bound parameter; the
// only text taken from a filter into the SQL is a JSON path that SQLite parses (each key written
// as a JSON string, so no key can end the path or the statement). No regex and no LIKE: a filter
// costs a few JSON look-ups per event examined, and a read examines at most SCAN_EVENTS events or
// SCAN_BYTES of stored JSON (whichever comes first). Claims (and any other reader) reuse
// `filterSql` with conditions of their own.
//
// The matching rule is event-match.ts's, evaluated by the database: a JSON string equal to the
// value; a number, true, false or null whose JSON text is the value (`data.ok=true` matches JSON
// true and the string "true"); or an array at the path holding such a member among its first MAX_MATCH_ARRAY_MEMBERS. Objects never match,
// nor does a missing path.
import { emailDedupeKey } from '../domain/dedupe-key.js';
import { type EventFilter, isIndex, MAX_MATCH_ARRAY_MEMBERS, type MatchCondition, matchNumber, stateWhere } from '../domain/event-filter.js';
import type { ScanPageRecord } from '../domain/model.js';
import { EVENT_COLUMNS, type EventRow, toEvent } from './rows.js';

export type Dialect = 'sqlite' | 'postgres';

/** Collects bound values and answers each one's placeholder in the dialect. */
export class SqlParams {
  readonly values: unknown[] = [];
  constructor(readonly dialect: Dialect) {}
  add(v: unknown): string {
    this.values.push(v);
    return this.dialect === 'sqlite' ? `@p${this.values.length}` : `$${this.values.length}`;
  }

  /** What to bind: better-sqlite3 takes named parameters from an object (`@p1` from `{ p1 }`), pg an array. */
  bound(): unknown[] {
    return this.dialect === 'sqlite' ? [Object.fromEntries(this.values.map((v, i) => [`p${i + 1}`, v]))] : this.values;
  }
}

/**
 * The filter as one SQL condition over the events table's columns (and, on PostgreSQL, a column
 * `dj`: the row's data as jsonb, which the scan computes once per row when a condition needs it).
 * 'TRUE' when the filter keeps everything.
 */
export function filterSql(f: EventFilter, p: SqlParams): string {
  const { plain, json } = filterSqlParts(f, p);
  return plain === 'TRUE' ? json : json === 'TRUE' ? plain : `${plain} AND ${json}`;
}

/**
 * The filter in two parts: `plain`, over the columns alone (state, type, top-level fields), and
 * `json`, the conditions that look into data or metadata. A scan evaluates `plain` first, so the
 * JSON is parsed only for the events that pass it. Either is 'TRUE' when empty.
 */
export function filterSqlParts(f: EventFilter, p: SqlParams): { plain: string; json: string } {
  const parts: string[] = [];
  const jsonParts: string[] = [];
  const where = stateWhere(f.state);
  if (where !== null) parts.push(where);
  if (f.types.length > 0) {
    parts.push(`(${f.types.map((t) => (t.prefix ? `substr(type, 1, ${p.add(t.text.length)}) = ${p.add(t.text)}` : `type = ${p.add(t.text)}`)).join(' OR ')})`);
  }
  for (const m of f.match) (m.root === 'data' || m.root === 'metadata' ? jsonParts : parts).push(conditionSql(m, p));
  return { plain: parts.length === 0 ? 'TRUE' : parts.join(' AND '), json: jsonParts.length === 0 ? 'TRUE' : jsonParts.join(' AND ') };
}

/** Whether the scan must give PostgreSQL the row's data as jsonb (`dj`). */
export const needsDataJson = (f: EventFilter): boolean => f.match.some((m) => m.root === 'data');

function conditionSql(m: MatchCondition, p: SqlParams): string {
  switch (m.root) {
    case 'type':
    case 'source':
    case 'id':
    case 'address_id':
      // A text field has nothing below it (event-match: a string has no own keys).
      return m.path.length > 0 ? 'FALSE' : `${m.root} = ${p.add(m.value)}`;
    case 'sequence': {
      const n = matchNumber(m.value);
      return m.path.length > 0 || n === null || !Number.isSafeInteger(n) ? 'FALSE' : `sequence = ${p.add(n)}`;
    }
    case 'dedupe_key':
      // Shown without the email namespace (dedupe-key.ts): either stored form shows as the value.
      return m.path.length > 0 ? 'FALSE' : `dedupe_key IN (${p.add(m.value)}, ${p.add(emailDedupeKey(m.value))})`;
    case 'data':
    case 'metadata':
    case 'trust':
      // trust is the service's own small object (domain/trust.ts): a condition on it is among the
      // plain ones, evaluated before any event's data is parsed.
      return p.dialect === 'sqlite' ? sqliteJsonCondition(m, p) : postgresJsonCondition(m, p);
  }
}

/**
 * SQLite: json_type/json_extract at a path. A digit segment is an array index or an object key
 * (event-match.ts takes whichever the value has): each combination is a path of its own, tried in
 * turn (at most 2^MAX_MATCH_INDEX_SEGMENTS), and the first that exists decides.
 */
function sqliteJsonCondition(m: MatchCondition, p: SqlParams): string {
  const col = m.root;
  let paths = ['$'];
  for (const s of m.path) {
    const asKey = `.${JSON.stringify(s)}`;
    paths = isIndex(s) ? paths.flatMap((x) => [`${x}[${s}]`, x + asKey]) : paths.map((x) => x + asKey);
  }
  const value = m.value;
  const n = matchNumber(value);
  const at = (path: string) => {
    const P = p.add(path);
    const alternatives = [`json_extract(${col}, ${P}) = ${p.add(value)}`]; // equal only to a JSON string (no affinity)
    if (n !== null) alternatives.push(`(json_type(${col}, ${P}) IN ('integer', 'real') AND json_extract(${col}, ${P}) = ${p.add(n)})`);
    if (value === 'true' || value === 'false' || value === 'null') alternatives.push(`json_type(${col}, ${P}) = '${value}'`);
    const member = [`j.value = ${p.add(value)} AND j.type = 'text'`];
    if (n !== null) member.push(`j.type IN ('integer', 'real') AND j.value = ${p.add(n)}`);
    if (value === 'true' || value === 'false' || value === 'null') member.push(`j.type = '${value}'`);
    alternatives.push(
      // Only the first MAX_MATCH_ARRAY_MEMBERS members: the LIMIT stops json_each there.
      `(json_type(${col}, ${P}) = 'array' AND EXISTS (SELECT 1 FROM (SELECT value, type FROM json_each(${col}, ${P}) LIMIT ${MAX_MATCH_ARRAY_MEMBERS}) AS j WHERE ${member.map((x) => `(${x})`).join(' OR ')}))`,
    );
    return { exists: `json_type(${col}, ${P}) IS NOT NULL`, matches: `(${alternatives.join(' OR ')})` };
  };
  if (paths.length === 1) return `coalesce(${at(paths[0]!).matches}, FALSE)`;
  // The first path that exists decides: CASE WHEN exists1 THEN matches1 WHEN exists2 … ELSE FALSE.
  return `coalesce(CASE ${paths
    .map((x) => {
      const a = at(x);
      return `WHEN ${a.exists} THEN ${a.matches}`;
    })
    .join(' ')} ELSE FALSE END, FALSE)`;
}

/**
 * PostgreSQL: `#>` with the path as text[] takes a digit segment as an array index or an object key,
 * as the value has it. jsonb equality compares numbers as numbers (1.50 = 1.5), and `@>` finds a
 * scalar member of an array. `data` comes from the scan's `dj`; metadata (an object of strings) and
 * trust (the service's own small JSON, domain/trust.ts) are cast where they are used.
 */
function postgresJsonCondition(m: MatchCondition, p: SqlParams): string {
  const doc = m.root === 'data' ? 'dj' : m.root === 'trust' ? `(${postgresJsonb('trust')})` : `(${postgresJsonb('metadata')})`;
  const v = `(${doc} #> ${p.add(m.path)}::text[])`;
  const n = matchNumber(m.value);
  const candidates = [`to_jsonb(${p.add(m.value)}::text)`];
  if (n !== null) candidates.push(`to_jsonb(${p.add(String(n))}::numeric)`);
  if (m.value === 'true' || m.value === 'false' || m.value === 'null') candidates.push(`'${m.value}'::jsonb`);
  // An array matches by one of its first MAX_MATCH_ARRAY_MEMBERS members.
  const member = `(jsonb_typeof(${v}) = 'array' AND EXISTS (SELECT 1 FROM (SELECT m FROM jsonb_array_elements(${v}) AS m LIMIT ${MAX_MATCH_ARRAY_MEMBERS}) AS members WHERE ${candidates.map((c) => `members.m = ${c}`).join(' OR ')}))`;
  const alternatives = [...candidates.map((c) => `${v} = ${c}`), member];
  return `coalesce(${alternatives.join(' OR ')}, FALSE)`;
}

/**
 * PostgreSQL cannot hold U+0000 in jsonb; stored JSON text may escape it (`\u0000` inside a string).
 * Such a row is cast with every `\u0000` replaced by `\ufffd`, which is valid JSON whatever came
 * before it, so the scan never fails on it; only a string holding U+0000 (or the text "\u0000"
 * after a backslash) compares differently, and no match value may contain U+0000.
 */
export const postgresJsonb = (col: string): string =>
  `CASE WHEN strpos(${col}, '\\u0000') = 0 THEN ${col}::jsonb ELSE replace(${col}, '\\u0000', '\\ufffd')::jsonb END`;

export interface ScanSqlParts {
  address: string;
  after: string;
  /** Exclusive upper bound of visible sequences (SQLite's undurable batches), or null. */
  below: string | null;
  scanEvents: number;
  scanBytes: number;
  /** Rows of the page: limit + 1. */
  limit: string;
  budget: string;
  /** Size of a row's stored JSON in the dialect. */
  bytes: string;
  /** The filter's condition (filterSql), or its part over the columns alone (filterSqlParts' plain). */
  filter: string;
  /**
   * PostgreSQL, when the filter reads data: `data` as jsonb (`dj`) and the JSON part of the filter.
   * The cast runs only for the events that pass `filter`, behind an OFFSET 0 fence so the planner
   * cannot fold it back into every row.
   */
  dataJson: { expr: string; filter: string } | null;
}

/**
 * The bounded scan, one statement: the events after the cursor, at most scanEvents of them and cut
 * (as a page is) once their stored JSON passes scanBytes, are the events examined; the page is the
 * matching ones among them, at most `limit` (asked as limit + 1) and cut at `budget` bytes (the
 * first match always stays). One summary row comes even when nothing matches: `last_examined`
 * (null when nothing was after the cursor), `examined`, `fetched` (more than `examined`: events
 * exist beyond what was examined) and `address_found` (0: no such address). Matching rows carry
 * `matched` = how many of them were fetched.
 */
export function scanSql(s: ScanSqlParts): string {
  return `WITH fetched_events AS (
      SELECT ${EVENT_COLUMNS}, ${s.bytes} AS bytes FROM events
      WHERE address_id = ${s.address} AND sequence > ${s.after}${s.below === null ? '' : ` AND sequence < ${s.below}`}
      ORDER BY sequence LIMIT ${s.scanEvents} + 1
    ), numbered AS (
      SELECT *, SUM(bytes) OVER (ORDER BY sequence ROWS UNBOUNDED PRECEDING) AS running,
             ROW_NUMBER() OVER (ORDER BY sequence) AS rn, COUNT(*) OVER () AS fetched
      FROM fetched_events
    ), examined AS (
      SELECT * FROM numbered WHERE rn <= ${s.scanEvents} AND (rn = 1 OR running <= ${s.scanBytes})
    ), matches AS (
      SELECT *, SUM(bytes) OVER (ORDER BY sequence ROWS UNBOUNDED PRECEDING) AS page_running,
             ROW_NUMBER() OVER (ORDER BY sequence) AS page_rn, COUNT(*) OVER () AS matched
      FROM (SELECT * FROM ${
        s.dataJson === null
          ? `examined WHERE ${s.filter}`
          : `(SELECT *, ${s.dataJson.expr} AS dj FROM examined WHERE ${s.filter} OFFSET 0) AS plain_matches WHERE ${s.dataJson.filter}`
      }
        ORDER BY sequence LIMIT ${s.limit}) AS first_matches
    )
    SELECT m.id, m.address_id, m.sequence, m.type, m.source, m.data, m.metadata, m.dedupe_key, m.trust, m.created_at, m.acknowledged_at,
           m.delivery_count, m.dead_at, m.dead_reason, m.quarantined_at, m.released_at, m.matched, summary.last_examined, summary.examined, summary.fetched, summary.address_found
    FROM (SELECT MAX(sequence) AS last_examined, COUNT(*) AS examined, MAX(fetched) AS fetched,
                 (SELECT COUNT(*) FROM addresses WHERE id = ${s.address}) AS address_found FROM examined) AS summary
    LEFT JOIN matches AS m ON (m.page_rn = 1 OR m.page_running <= ${s.budget})
    ORDER BY m.sequence`;
}

/** A row of scanSql. */
export interface ScanRow {
  id: string | null;
  address_id: string | null;
  sequence: number | string | null;
  type: string | null;
  source: string | null;
  data: string | null;
  metadata: string | null;
  dedupe_key: string | null;
  trust: string | null;
  created_at: number | string | null;
  acknowledged_at: number | string | null;
  delivery_count: number | string | null;
  dead_at: number | string | null;
  dead_reason: string | null;
  quarantined_at: number | string | null;
  released_at: number | string | null;
  matched: number | string | null;
  last_examined: number | string | null;
  examined: number | string;
  fetched: number | string | null;
  address_found: number | string;
}

/**
 * The page from scanSql's rows (asked for `limit` + 1 matches); null when the address does not
 * exist. `nextCursor` is the last event examined, unless the page was cut before the examined
 * events' matches ran out: then it is the last event returned, so nothing is skipped.
 */
export function scanPage(rows: ScanRow[], after: number, limit: number): ScanPageRecord | null {
  const summary = rows[0];
  if (summary === undefined || Number(summary.address_found) === 0) return null;
  const matches = rows.filter((r) => r.id !== null);
  const matched = matches.length === 0 ? 0 : Number(matches[0]!.matched);
  const kept = matches.slice(0, limit).map((r) => toEvent(r as EventRow));
  if (kept.length < matched) return { events: kept, nextCursor: kept.at(-1)!.sequence, hasMore: true };
  const lastExamined = summary.last_examined === null ? after : Number(summary.last_examined);
  return { events: kept, nextCursor: lastExamined, hasMore: Number(summary.fetched ?? 0) > Number(summary.examined) };
}
