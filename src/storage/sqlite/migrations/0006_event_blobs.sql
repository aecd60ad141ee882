-- Bytes stored beside an event (decisions.md §20; src/blobs/event-blob.ts): a body or attachment too
-- large to sit inline in the event's JSON, written in the event's own transaction and deleted with
-- it (the cascade from events, which cascades from addresses). `events.blob_bytes` is the sum of an
-- event's blob sizes: it counts toward MAX_BYTES_PER_ADDRESS (addresses.event_bytes) and is freed
-- when the event is pruned. Number 0006 on both stores (numbers are aligned across the stores).
ALTER TABLE events ADD COLUMN blob_bytes INTEGER NOT NULL DEFAULT 0;

CREATE TABLE event_blobs (
  address_id   TEXT    NOT NULL,
  sequence     INTEGER NOT NULL,
  name         TEXT    NOT NULL,   -- 'raw' or 'attachments/<n>'
  content_type TEXT    NOT NULL,
  sha256       TEXT    NOT NULL,   -- lower-case hex, the download's ETag
  size         INTEGER NOT NULL,
  bytes        BLOB    NOT NULL,
  PRIMARY KEY (address_id, sequence, name),
  FOREIGN KEY (address_id, sequence) REFERENCES events (address_id, sequence) ON DELETE CASCADE
) STRICT;
