-- The bytes of stored data and metadata per address (UTF-8), for the MAX_BYTES_PER_ADDRESS quota:
-- kept beside event_count by every append and prune, so checking the quota costs no scan.
ALTER TABLE addresses ADD COLUMN event_bytes INTEGER NOT NULL DEFAULT 0;
UPDATE addresses SET event_bytes = (
  SELECT ifnull(sum(length(CAST(data AS BLOB)) + ifnull(length(CAST(metadata AS BLOB)), 0)), 0)
  FROM events WHERE events.address_id = addresses.id);

-- Pruning walks only acknowledged events, oldest first: without this index a full address with
-- none acknowledged would make every refused delivery scan all of its events.
CREATE INDEX events_acknowledged ON events (address_id, sequence) WHERE acknowledged_at IS NOT NULL;
