// The append rule's arithmetic, once (design.md, "The queue"): what an event weighs in its address's
// byte quota, and what must be pruned before it fits. The SQLite store calls these; PostgreSQL's
// ra_append_event (migrations 0006 and 0010) computes the same in PL/pgSQL, and the store contract
// tests (test/storage/store-contract*.test.ts) hold both stores to the same answers.

export interface QuotaLimits {
  maxEventsPerAddress: number;
  maxBytesPerAddress: number;
}

export interface QueueHolding {
  eventCount: number;
  eventBytes: number;
}

/**
 * The bytes an event holds of MAX_BYTES_PER_ADDRESS: its data and metadata as UTF-8, and the bytes
 * stored beside it (`blobBytes` of its blobs). The SQL of the same is `storedBytesSql` (storage/stored-bytes-sql.ts).
 */
export function storedBytes(data: string, metadata: string | null, blobBytes = 0): number {
  return Buffer.byteLength(data) + (metadata === null ? 0 : Buffer.byteLength(metadata)) + blobBytes;
}

/**
 * What an append of `size` bytes must free first: null when it fits as the queue stands; else at
 * least `events` events and `bytes` bytes, taken from the oldest acknowledged events (as few as
 * satisfy both). When the acknowledged events cannot free that much, the append is queue_full.
 */
export function roomToFree(held: QueueHolding, size: number, limits: QuotaLimits): { events: number; bytes: number } | null {
  if (held.eventCount < limits.maxEventsPerAddress && held.eventBytes + size <= limits.maxBytesPerAddress) return null;
  return { events: held.eventCount - limits.maxEventsPerAddress + 1, bytes: held.eventBytes + size - limits.maxBytesPerAddress };
}
