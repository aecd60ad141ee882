-- Sender policy per address and the quarantined state (design.md, "Sender policy and quarantine"),
-- as in the SQLite migration beside it. The append functions are unchanged: an append that must be
-- quarantined marks its event in the same transaction, before COMMIT (postgres-store.ts), so no
-- reader ever sees it unmarked.
ALTER TABLE events ADD COLUMN quarantined_at BIGINT;
ALTER TABLE events ADD COLUMN released_at BIGINT;
CREATE TABLE sender_policies (
  address_id TEXT PRIMARY KEY REFERENCES addresses (id) ON DELETE CASCADE,
  policy TEXT NOT NULL,
  updated_at BIGINT NOT NULL
);
