-- Running a public instance (decisions.md §17): the creating client's IP for `admin list`, the two
-- partial indexes that keep retention and /metrics cheap (as in the SQLite migration beside it),
-- and retention's batch as one function.
ALTER TABLE addresses ADD COLUMN created_ip TEXT;
CREATE INDEX events_acknowledged_at ON events (acknowledged_at) WHERE acknowledged_at IS NOT NULL;
CREATE INDEX events_unacknowledged ON events (created_at) WHERE acknowledged_at IS NULL;

-- Deletes up to p_batch events acknowledged before p_cutoff, oldest ack first, and keeps the
-- addresses' event_count and event_bytes exact. The address rows are locked first, in id order,
-- the way ra_append_event(s) lock them: so no deadlock with an append, and an append's pruning and
-- this deletion never both subtract one event (whichever comes second sees it gone). Returns how
-- many events were deleted.
CREATE FUNCTION ra_delete_acknowledged(p_cutoff BIGINT, p_batch INTEGER) RETURNS INTEGER
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_addr TEXT[];
  v_seq BIGINT[];
  v_deleted INTEGER;
BEGIN
  SELECT array_agg(v.address_id), array_agg(v.sequence) INTO v_addr, v_seq FROM (
    SELECT e.address_id, e.sequence FROM events e
    WHERE e.acknowledged_at IS NOT NULL AND e.acknowledged_at < p_cutoff
    ORDER BY e.acknowledged_at LIMIT p_batch) v;
  IF v_addr IS NULL THEN
    RETURN 0;
  END IF;
  PERFORM 1 FROM addresses a WHERE a.id = ANY (v_addr) ORDER BY a.id FOR UPDATE;
  WITH gone AS (
    DELETE FROM events e USING unnest(v_addr, v_seq) AS v(a, s)
    WHERE e.address_id = v.a AND e.sequence = v.s
    RETURNING e.address_id, octet_length(e.data) + coalesce(octet_length(e.metadata), 0) + e.blob_bytes AS bytes
  ), per AS (
    SELECT g.address_id, count(*)::INTEGER AS n, sum(g.bytes)::BIGINT AS b FROM gone g GROUP BY g.address_id
  ), counted AS (
    UPDATE addresses a SET event_count = a.event_count - per.n, event_bytes = a.event_bytes - per.b
    FROM per WHERE a.id = per.address_id RETURNING per.n
  )
  SELECT coalesce(sum(c.n), 0)::INTEGER INTO v_deleted FROM counted c;
  RETURN v_deleted;
END
$$;
