-- The MAX_BYTES_PER_ADDRESS quota (issue 21.7): the bytes of stored data and metadata per address,
-- kept beside event_count, and the append functions taking a byte limit too. A new event that would
-- take the count or the bytes past their limit first prunes the oldest acknowledged events, as few
-- as make room for both; when the acknowledged events cannot make room, the outcome is queue_full.
ALTER TABLE addresses ADD COLUMN event_bytes BIGINT NOT NULL DEFAULT 0;
UPDATE addresses a SET event_bytes = s.bytes FROM (
  SELECT address_id, sum(octet_length(data) + coalesce(octet_length(metadata), 0)) AS bytes FROM events GROUP BY address_id) s
WHERE s.address_id = a.id;

-- Pruning walks only acknowledged events, oldest first: without this index a full address with
-- none acknowledged would make every refused delivery scan all of its events.
CREATE INDEX events_acknowledged ON events (address_id, sequence) WHERE acknowledged_at IS NOT NULL;

DROP FUNCTION ra_append_events(TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], BIGINT[], INTEGER, TEXT);
DROP FUNCTION ra_append_event(TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, BIGINT, INTEGER, TEXT);

CREATE FUNCTION ra_append_event(
  p_address_id TEXT, p_id TEXT, p_type TEXT, p_source TEXT, p_data TEXT, p_metadata TEXT,
  p_dedupe_key TEXT, p_created_at BIGINT, p_max_events INTEGER, p_max_bytes BIGINT, p_channel TEXT)
RETURNS TABLE (
  outcome TEXT, id TEXT, address_id TEXT, sequence BIGINT, type TEXT, source TEXT, data TEXT,
  metadata TEXT, dedupe_key TEXT, created_at BIGINT, acknowledged_at BIGINT)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_last BIGINT;
  v_count INTEGER;
  v_bytes BIGINT;
  v_size BIGINT := octet_length(p_data) + coalesce(octet_length(p_metadata), 0);
  v_upto BIGINT;
  v_pruned INTEGER := 0;
  v_pruned_bytes BIGINT := 0;
BEGIN
  SELECT a.last_sequence, a.event_count, a.event_bytes INTO v_last, v_count, v_bytes
    FROM addresses a WHERE a.id = p_address_id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'address_gone'::TEXT, NULL::TEXT, NULL::TEXT, NULL::BIGINT, NULL::TEXT, NULL::TEXT, NULL::TEXT,
      NULL::TEXT, NULL::TEXT, NULL::BIGINT, NULL::BIGINT;
    RETURN;
  END IF;

  IF p_dedupe_key IS NOT NULL THEN
    RETURN QUERY SELECT 'duplicate'::TEXT, e.id, e.address_id, e.sequence, e.type, e.source, e.data, e.metadata,
      e.dedupe_key, e.created_at, e.acknowledged_at
      FROM events e WHERE e.address_id = p_address_id AND e.dedupe_key = p_dedupe_key;
    IF FOUND THEN
      RETURN;
    END IF;
  END IF;

  IF v_count >= p_max_events OR v_bytes + v_size > p_max_bytes THEN
    -- The shortest run of oldest acknowledged events whose removal makes room for both limits.
    SELECT s.sequence, s.n, s.b INTO v_upto, v_pruned, v_pruned_bytes FROM (
      SELECT e.sequence, count(*) OVER w AS n, sum(octet_length(e.data) + coalesce(octet_length(e.metadata), 0)) OVER w AS b
      FROM events e WHERE e.address_id = p_address_id AND e.acknowledged_at IS NOT NULL
      WINDOW w AS (ORDER BY e.sequence)) s
    WHERE s.n >= v_count - p_max_events + 1 AND s.b >= v_bytes + v_size - p_max_bytes
    ORDER BY s.sequence LIMIT 1;
    IF NOT FOUND THEN
      RETURN QUERY SELECT 'queue_full'::TEXT, NULL::TEXT, NULL::TEXT, NULL::BIGINT, NULL::TEXT, NULL::TEXT, NULL::TEXT,
        NULL::TEXT, NULL::TEXT, NULL::BIGINT, NULL::BIGINT;
      RETURN;
    END IF;
    DELETE FROM events e WHERE e.address_id = p_address_id AND e.acknowledged_at IS NOT NULL AND e.sequence <= v_upto;
  END IF;

  INSERT INTO events (id, address_id, sequence, type, source, data, metadata, dedupe_key, created_at, acknowledged_at)
    VALUES (p_id, p_address_id, v_last + 1, p_type, p_source, p_data, p_metadata, p_dedupe_key, p_created_at, NULL);
  UPDATE addresses a SET last_sequence = v_last + 1, event_count = a.event_count + 1 - v_pruned,
    event_bytes = a.event_bytes + v_size - v_pruned_bytes WHERE a.id = p_address_id;
  PERFORM pg_notify(p_channel, p_address_id);
  RETURN QUERY SELECT 'created'::TEXT, p_id, p_address_id, v_last + 1, p_type, p_source, p_data, p_metadata,
    p_dedupe_key, p_created_at, NULL::BIGINT;
END
$$;

CREATE FUNCTION ra_append_events(
  p_address_ids TEXT[], p_ids TEXT[], p_types TEXT[], p_sources TEXT[], p_datas TEXT[], p_metadatas TEXT[],
  p_dedupe_keys TEXT[], p_created_ats BIGINT[], p_max_events INTEGER, p_max_bytes BIGINT, p_channel TEXT)
RETURNS TABLE (
  ord INTEGER, outcome TEXT, id TEXT, address_id TEXT, sequence BIGINT, type TEXT, source TEXT, data TEXT,
  metadata TEXT, dedupe_key TEXT, created_at BIGINT, acknowledged_at BIGINT)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  FOR i IN 1 .. coalesce(array_length(p_ids, 1), 0) LOOP
    RETURN QUERY SELECT i, r.* FROM ra_append_event(p_address_ids[i], p_ids[i], p_types[i], p_sources[i], p_datas[i],
      p_metadatas[i], p_dedupe_keys[i], p_created_ats[i], p_max_events, p_max_bytes, p_channel) r;
  END LOOP;
END
$$;
