-- Approvals (design.md, "Approvals"): a question for a person, answered on a page whose URL holds a
-- secret. The secret is stored only as its SHA-256 hash. `responses` counts the answers recorded;
-- an answer, an expiry and a cancellation each change this row in the same transaction as the
-- event they append (approval.decided / .expired / .cancelled), so a count and its events never
-- disagree. `options` and `fields` are JSON text, validated before they are stored.
CREATE TABLE approvals (
  id            TEXT    PRIMARY KEY,
  address_id    TEXT    NOT NULL REFERENCES addresses (id) ON DELETE CASCADE,
  secret_hash   BLOB    NOT NULL,
  question      TEXT    NOT NULL,
  details       TEXT,
  options       TEXT    NOT NULL,
  fields        TEXT    NOT NULL,
  max_responses INTEGER NOT NULL,
  responses     INTEGER NOT NULL DEFAULT 0,
  status        TEXT    NOT NULL,   -- pending | decided | expired | cancelled
  created_at    INTEGER NOT NULL,   -- epoch ms
  expires_at    INTEGER NOT NULL,   -- epoch ms
  closed_at     INTEGER
) STRICT;

CREATE INDEX approvals_address ON approvals (address_id);
-- The sweeper's question: which pending approvals are past their expiry.
CREATE INDEX approvals_due ON approvals (expires_at) WHERE status = 'pending';

-- The answers, by their number n (1..max_responses), with the approval.decided event each made.
CREATE TABLE approval_answers (
  approval_id TEXT    NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
  n           INTEGER NOT NULL,
  event_id    TEXT    NOT NULL,
  answer      TEXT    NOT NULL,   -- JSON text: the event's data
  PRIMARY KEY (approval_id, n)
) STRICT;
