-- The claims' index of open events, kept only for the addresses that use claims (SQLite only;
-- design.md, "Claims"). Every delivery added an entry to events_open, on a leaf page of its
-- address's own: over many addresses that was a third of the pages a commit wrote, for an index
-- that only claims read. Now an event enters it only when its address has been claimed from: the
-- first claim on an address marks the address (claims_indexed) and its open events (claim_indexed),
-- and the writer marks every later event of that address as it inserts it. The claim queries
-- name claim_indexed = 1, so they still use the index, and see exactly the open events.
-- An address claimed from before this migration is indexed again by its next claim.
ALTER TABLE addresses ADD COLUMN claims_indexed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN claim_indexed INTEGER;  -- 1 while the event's address is claims_indexed
DROP INDEX events_open;
CREATE INDEX events_open ON events (address_id, sequence) WHERE claim_indexed = 1 AND acknowledged_at IS NULL AND dead_at IS NULL;
