// Bytes stored beside an event (decisions.md §20): a capture's or a mail's body, or an attachment,
// too large to sit inline in the event's JSON. An event's stored JSON is bounded by MAX_EVENT_BYTES;
// what does not fit is stored once, as bytes, in the `event_blobs` table of the same store, written
// in the same transaction as its event (so it is durable before the 2xx exactly like the event,
// and an event is never visible without its bytes), and deleted with it (ON DELETE CASCADE from
// events, which cascade from addresses: pruning, acknowledged-event retention, address deletion and
// expiry all take the bytes with them).
//
// Why a table and not files beside SQLite: one mechanism on both stores, one transaction and one
// fdatasync per group commit (files would need their own fsyncs, a rename protocol and a sweeper
// for files orphaned by a crash between the file and the commit), and the backups of the database
// hold everything. Reads are served in chunks (substr over the stored value), so a download is not
// held whole in JS.
//
// The event names its bytes by URL: `{base_url}/api/v1/addresses/{id}/events/{eventId}/{name}`,
// where `name` is `raw` or `attachments/{n}` (n the index in `data.attachments`). The URL is written
// into `data` when the event is built, so every read path returns the same `data` bytes; the event
// id is therefore allocated by the caller before `data` is built (EventInput.id).
//
// Quota: a blob's bytes count toward MAX_BYTES_PER_ADDRESS with its event's data and metadata
// (`events.blob_bytes`), and are pruned with it; they do not count toward a page's byte budget,
// since a page never carries them.

/** Where a blob hangs off its event: the raw body/message, or attachment n (index in data.attachments). */
export type BlobName = 'raw' | `attachments/${number}`;

/** Bytes to store beside a new event. Plain data (structured-clonable), so a worker may build it. */
export interface BlobInput {
  name: BlobName;
  contentType: string;
  bytes: Uint8Array;
  /** Lower-case hex SHA-256 of `bytes`: the ETag of the download. */
  sha256: string;
}

/** A stored blob opened for reading. */
export interface StoredBlob {
  contentType: string;
  size: number;
  sha256: string;
  /** The bytes, in order, a bounded chunk at a time; throws if the blob vanishes mid-way (its event was pruned). */
  chunks(): AsyncIterable<Buffer>;
}

/** Bytes per chunk a blob is read in: what one download holds in memory at once. */
export const BLOB_CHUNK_BYTES = 1024 * 1024;

export const isBlobName = (s: string): s is BlobName => s === 'raw' || /^attachments\/(0|[1-9]\d{0,5})$/.test(s);

/** The URL an event names a blob by (decisions.md §20). */
export function blobUrl(baseUrl: string, addressId: string, eventId: string, name: BlobName): string {
  return `${baseUrl}/api/v1/addresses/${addressId}/events/${eventId}/${name}`;
}

/** Bytes the blobs take toward MAX_BYTES_PER_ADDRESS. */
export const blobBytes = (blobs: readonly BlobInput[] | undefined): number => (blobs ?? []).reduce((n, b) => n + b.bytes.byteLength, 0);
