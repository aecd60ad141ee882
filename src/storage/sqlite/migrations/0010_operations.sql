-- Running a public instance (decisions.md §17): the creating client's IP for `admin list`, and the
-- two partial indexes that keep retention and /metrics cheap. Acknowledged events by the time of
-- their ack: retention deletes the oldest first in small batches, each batch an index range, never
-- a scan. Unacknowledged events by creation time: /metrics reads the oldest in one index step and
-- counts them from the index alone.
ALTER TABLE addresses ADD COLUMN created_ip TEXT;
CREATE INDEX events_acknowledged_at ON events (acknowledged_at) WHERE acknowledged_at IS NOT NULL;
CREATE INDEX events_unacknowledged ON events (created_at) WHERE acknowledged_at IS NULL;
