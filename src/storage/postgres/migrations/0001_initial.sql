-- Addresses, their ordered event queues, and the provisioning rate-limit windows.
-- Same meaning as the SQLite schema beside it; times are epoch milliseconds in BIGINT columns.

CREATE TABLE addresses (
  id                TEXT   PRIMARY KEY,
  slug              TEXT   NOT NULL UNIQUE,
  name              TEXT   NOT NULL,
  task_id           TEXT,
  read_token_hash   BYTEA  NOT NULL,   -- SHA-256 of the read token; the token itself is never stored
  inbox_secret_hash BYTEA  NOT NULL,   -- SHA-256 of the inbox secret
  created_at        BIGINT NOT NULL,   -- epoch ms
  expires_at        BIGINT NOT NULL,   -- epoch ms
  last_sequence     BIGINT NOT NULL DEFAULT 0,  -- the sequence of the newest event ever appended;
                                                -- allocated under this row's lock (FOR UPDATE)
  event_count       INTEGER NOT NULL DEFAULT 0  -- events currently stored (acknowledged or not)
);

CREATE INDEX addresses_expires_at ON addresses (expires_at);

CREATE TABLE events (
  address_id      TEXT   NOT NULL REFERENCES addresses (id) ON DELETE CASCADE,
  sequence        BIGINT NOT NULL,
  id              TEXT   NOT NULL,
  type            TEXT   NOT NULL,
  source          TEXT   NOT NULL,
  data            TEXT   NOT NULL,   -- JSON text, returned byte for byte as it was validated
  metadata        TEXT,              -- JSON text of an object of strings
  dedupe_key      TEXT,
  created_at      BIGINT NOT NULL,
  acknowledged_at BIGINT,
  -- A bug that reused a sequence must fail loudly instead of reordering a queue.
  PRIMARY KEY (address_id, sequence)
);

-- Event ids are unique; the index leads with their time part (see newEventId), so it grows at
-- one end instead of taking each insert on a random page.
CREATE UNIQUE INDEX events_id ON events ((substr(id, 10, 9)), id);

-- The backstop of deduplication (the inserting transaction looks the key up first).
CREATE UNIQUE INDEX events_dedupe_key ON events (address_id, dedupe_key) WHERE dedupe_key IS NOT NULL;

CREATE TABLE rate_windows (
  key          TEXT    PRIMARY KEY,
  window_start BIGINT  NOT NULL,   -- epoch ms, start of the fixed window
  count        INTEGER NOT NULL
);

CREATE INDEX rate_windows_window_start ON rate_windows (window_start);
