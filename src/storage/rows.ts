// The columns both backends store, and their mapping to domain records. Integers arrive as numbers
// from SQLite and as strings from PostgreSQL's int8, so the mappers convert with Number().
import type { AddressRecord, EventRecord } from '../domain/model.js';

type Int = number | string;

export interface AddressRow {
  id: string;
  slug: string;
  name: string;
  task_id: string | null;
  read_token_hash: Buffer;
  inbox_secret_hash: Buffer;
  signing_keys: Buffer | null;
  created_at: Int;
  expires_at: Int;
}

export interface EventRow {
  id: string;
  address_id: string;
  sequence: Int;
  type: string;
  source: string;
  data: string;
  metadata: string | null;
  dedupe_key: string | null;
  /** JSON text (migration 0012). */
  trust: string;
  created_at: Int;
  acknowledged_at: Int | null;
  /** Claims (migration 0008); absent from rows an append function returns, which are never claimed. */
  delivery_count?: Int | null;
  dead_at?: Int | null;
  dead_reason?: string | null;
  /** Quarantine (migration 0013); absent from rows an append function returns (the store knows what it marked). */
  quarantined_at?: Int | null;
  released_at?: Int | null;
}

export const ADDRESS_COLUMNS = 'id, slug, name, task_id, read_token_hash, inbox_secret_hash, signing_keys, created_at, expires_at';
/**
 * The time part of an event id (characters 10-18, 1-based; see newEventId), the leading key of
 * both stores' unique index on event ids (the 0001 migrations). A lookup by id names it too, so
 * the planner uses that index: `WHERE ${EVENT_ID_TIME_SQL} = substr($id, 10, 9) AND id = $id`.
 */
export const EVENT_ID_TIME_SQL = 'substr(id, 10, 9)';

export const EVENT_COLUMNS =
  'id, address_id, sequence, type, source, data, metadata, dedupe_key, trust, created_at, acknowledged_at, delivery_count, dead_at, dead_reason, quarantined_at, released_at';
/** The columns an insert writes (the claim columns take their defaults). */
export const INSERTED_EVENT_COLUMNS = 'id, address_id, sequence, type, source, data, metadata, dedupe_key, trust, created_at, acknowledged_at';

export const toAddress = (r: AddressRow): AddressRecord => ({
  id: r.id,
  slug: r.slug,
  name: r.name,
  taskId: r.task_id,
  readTokenHash: r.read_token_hash,
  inboxSecretHash: r.inbox_secret_hash,
  signingKeys: r.signing_keys,
  createdAt: Number(r.created_at),
  expiresAt: Number(r.expires_at),
});

export const toEvent = (r: EventRow): EventRecord => ({
  id: r.id,
  addressId: r.address_id,
  sequence: Number(r.sequence),
  type: r.type,
  source: r.source,
  data: r.data,
  metadata: r.metadata,
  dedupeKey: r.dedupe_key,
  trust: r.trust,
  createdAt: Number(r.created_at),
  acknowledgedAt: r.acknowledged_at === null ? null : Number(r.acknowledged_at),
  ...claimFields(r),
  ...quarantineFields(r),
});

/** The quarantine columns, only when the event was quarantined: every other event reads as before. */
function quarantineFields(r: EventRow): Pick<EventRecord, 'quarantinedAt' | 'releasedAt'> {
  if (r.quarantined_at === undefined || r.quarantined_at === null) return {};
  return { quarantinedAt: Number(r.quarantined_at), releasedAt: r.released_at === undefined || r.released_at === null ? null : Number(r.released_at) };
}

/** The claim columns, only when the event was ever claimed: an event no one claimed reads as before. */
function claimFields(r: EventRow): Pick<EventRecord, 'deliveryCount' | 'deadAt' | 'deadReason'> {
  const deliveries = r.delivery_count === undefined || r.delivery_count === null ? 0 : Number(r.delivery_count);
  const deadAt = r.dead_at === undefined || r.dead_at === null ? null : Number(r.dead_at);
  if (deliveries === 0 && deadAt === null) return {};
  return { deliveryCount: deliveries, deadAt, deadReason: r.dead_reason ?? null };
}

/**
 * One page of an address's events bounded by count and by bytes, as SQL both backends run: the
 * next `limit + 1` events after the cursor, cut before the event that would take the running total
 * of stored JSON bytes past the budget. The budget is never below MAX_EVENT_BYTES (the service's
 * readPage), so every event stored since migration 0006 fits: `rn = 1` only serves an
 * event stored before MAX_EVENT_BYTES existed (or before an operator lowered it) alone, so that no
 * cursor is stuck behind it. `fetched` tells whether
 * anything was left out. `bytes` is the caller's expression for one row's size in its dialect.
 * Placeholders are the caller's: `{after}`, `{below}`, `{limit}`, `{budget}`, `{address}`.
 */
export function boundedPageSql(bytes: string, p: { address: string; after: string; below: string | null; limit: string; budget: string }): string {
  return `SELECT ${EVENT_COLUMNS}, fetched FROM (
      SELECT *, SUM(bytes) OVER (ORDER BY sequence ROWS UNBOUNDED PRECEDING) AS running,
             ROW_NUMBER() OVER (ORDER BY sequence) AS rn, COUNT(*) OVER () AS fetched
      FROM (
        SELECT ${EVENT_COLUMNS}, ${bytes} AS bytes FROM events
        WHERE address_id = ${p.address} AND sequence > ${p.after}${p.below === null ? '' : ` AND sequence < ${p.below}`}
        ORDER BY sequence LIMIT ${p.limit}
      ) AS next_events
    ) AS counted
    WHERE rn = 1 OR running <= ${p.budget}
    ORDER BY sequence`;
}

/** The page's rows and whether more follow, from `boundedPageSql`'s rows (asked for `limit + 1`). */
export function cutPage<R extends { fetched: number | string | null }>(rows: R[], limit: number): { rows: R[]; hasMore: boolean } {
  const fetched = rows.length === 0 ? 0 : Number(rows[0]!.fetched);
  if (rows.length > limit) return { rows: rows.slice(0, limit), hasMore: true };
  return { rows, hasMore: fetched > rows.length };
}

/**
 * Releases an event from quarantine (design.md, "Sender policy and quarantine"): sets released_at
 * once, only on an event that was quarantined, and returns the event whatever it was (the caller
 * tells "never quarantined" from the row). Bound: now, the event id twice (its time part leads the
 * index), the address.
 */
export const releaseSql = (dialect: 'sqlite' | 'postgres'): string => {
  const [now, id, id2, address] = dialect === 'sqlite' ? ['?', '?', '?', '?'] : ['$1::bigint', '$2::text', '$2', '$3'];
  return `UPDATE events SET released_at = CASE WHEN quarantined_at IS NULL THEN NULL ELSE COALESCE(released_at, ${now}) END
  WHERE ${EVENT_ID_TIME_SQL} = substr(${id}, 10, 9) AND id = ${id2} AND address_id = ${address} RETURNING ${EVENT_COLUMNS}`;
};
