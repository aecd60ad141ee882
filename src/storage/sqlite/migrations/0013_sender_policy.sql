-- Sender policy per address and the quarantined state (design.md, "Sender policy and quarantine").
-- An event that failed its address's policy is stored with quarantined_at set; releasing it sets
-- released_at. It is held (skipped by default reads, streams, waits, claims and consumers) while
-- quarantined_at is set and released_at is not. The policy is the address's own data, one row,
-- deleted with the address.
ALTER TABLE events ADD COLUMN quarantined_at INTEGER;
ALTER TABLE events ADD COLUMN released_at INTEGER;
CREATE TABLE sender_policies (
  address_id TEXT PRIMARY KEY REFERENCES addresses (id) ON DELETE CASCADE,
  policy TEXT NOT NULL,
  updated_at INTEGER NOT NULL
);
