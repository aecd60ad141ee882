-- Named consumers (design.md, "Reading without loss"): a position per reader name, held by the server, moved only by
-- the reader asking for the page after it (after=N stores N). Deleted with the address.
CREATE TABLE consumers (
  address_id TEXT    NOT NULL REFERENCES addresses (id) ON DELETE CASCADE,
  name       TEXT    NOT NULL,   -- [a-z0-9_.:-]{1,64}
  cursor     INTEGER NOT NULL,   -- the sequence the consumer has confirmed; it reads after it
  updated_at INTEGER NOT NULL,   -- epoch ms
  PRIMARY KEY (address_id, name)
) STRICT, WITHOUT ROWID;
