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
  created_at: Int;
  acknowledged_at: Int | null;
}

export const ADDRESS_COLUMNS = 'id, slug, name, task_id, read_token_hash, inbox_secret_hash, created_at, expires_at';
/**
 * The time part of an event id (characters 10-18, 1-based; see newEventId), the leading key of
 * both stores' unique index on event ids (the 0001 migrations). A lookup by id names it too, so
 * the planner uses that index: `WHERE ${EVENT_ID_TIME_SQL} = substr($id, 10, 9) AND id = $id`.
 */
export const EVENT_ID_TIME_SQL = 'substr(id, 10, 9)';

export const EVENT_COLUMNS = 'id, address_id, sequence, type, source, data, metadata, dedupe_key, created_at, acknowledged_at';

export const toAddress = (r: AddressRow): AddressRecord => ({
  id: r.id,
  slug: r.slug,
  name: r.name,
  taskId: r.task_id,
  readTokenHash: r.read_token_hash,
  inboxSecretHash: r.inbox_secret_hash,
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
  createdAt: Number(r.created_at),
  acknowledgedAt: r.acknowledged_at === null ? null : Number(r.acknowledged_at),
});
