-- Addresses, their ordered event queues, and the provisioning rate-limit windows.

CREATE TABLE addresses (
  id                TEXT    PRIMARY KEY,
  slug              TEXT    NOT NULL UNIQUE,
  name              TEXT    NOT NULL,
  task_id           TEXT,
  read_token_hash   BLOB    NOT NULL,   -- SHA-256 of the read token; the token itself is never stored
  inbox_secret_hash BLOB    NOT NULL,   -- SHA-256 of the inbox secret
  created_at        INTEGER NOT NULL,   -- epoch ms
  expires_at        INTEGER NOT NULL,   -- epoch ms
  last_sequence     INTEGER NOT NULL DEFAULT 0,  -- the sequence of the newest event ever appended
  event_count       INTEGER NOT NULL DEFAULT 0   -- events currently stored (acknowledged or not)
) STRICT;

CREATE INDEX addresses_expires_at ON addresses (expires_at);

CREATE TABLE events (
  address_id      TEXT    NOT NULL REFERENCES addresses (id) ON DELETE CASCADE,
  sequence        INTEGER NOT NULL,
  id              TEXT    NOT NULL,
  type            TEXT    NOT NULL,
  source          TEXT    NOT NULL,
  data            TEXT    NOT NULL,   -- JSON text
  metadata        TEXT,               -- JSON text of an object of strings
  dedupe_key      TEXT,
  created_at      INTEGER NOT NULL,
  acknowledged_at INTEGER,
  -- A bug that reused a sequence must fail loudly instead of reordering a queue.
  UNIQUE (address_id, sequence)
) STRICT;

-- Event ids are unique; the index leads with their time part (see newEventId), so it grows at
-- one end instead of taking each insert on a random page.
CREATE UNIQUE INDEX events_id ON events (substr(id, 10, 9), id);

CREATE UNIQUE INDEX events_dedupe_key ON events (address_id, dedupe_key) WHERE dedupe_key IS NOT NULL;

CREATE TABLE rate_windows (
  key          TEXT    PRIMARY KEY,
  window_start INTEGER NOT NULL,
  count        INTEGER NOT NULL
) STRICT;
