-- Webhook subscriptions (design.md, "Push subscriptions"): an address's URLs that get each matching
-- event POSTed, in order. The position is not here: it is the named consumer push:<id> (consumers
-- table), so a reader can see it and take over by pull. `secret` is the signing secret sealed
-- (push/subscription-secret.ts); the delivery state says which event failed how often and when the
-- next attempt is due; lease_owner/lease_until say which instance delivers it (one at a time).
CREATE TABLE subscriptions (
  address_id      TEXT    NOT NULL REFERENCES addresses (id) ON DELETE CASCADE,
  id              TEXT    NOT NULL,
  url             TEXT    NOT NULL,
  secret          BLOB    NOT NULL,
  filter          TEXT    NOT NULL,   -- JSON {"type": [...], "match": [...]}: the filter of reads
  created_at      INTEGER NOT NULL,
  expires_at      INTEGER,            -- epoch ms; null: until deleted
  paused_at       INTEGER,
  paused_reason   TEXT,
  attempts        INTEGER NOT NULL DEFAULT 0,   -- failed attempts on the event after the position
  next_attempt_at INTEGER,
  last_attempt_at INTEGER,
  last_status     INTEGER,
  last_error      TEXT,
  last_success_at INTEGER,
  lease_owner     TEXT,
  lease_until     INTEGER,
  PRIMARY KEY (address_id, id)
) STRICT;
