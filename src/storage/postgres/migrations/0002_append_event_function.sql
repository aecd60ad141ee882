-- Appending an event as one server-side function: one round trip per delivery instead of five
-- (BEGIN, lock, dedupe lookup, insert, COMMIT). Same rules as before, same transaction:
--   * the address row is locked FOR UPDATE, so appends to one address are serialised and a later
--     sequence can never commit before an earlier one (a reader would skip it);
--   * each statement of a VOLATILE plpgsql function takes a new snapshot, so the dedupe lookup
--     after the lock sees every event committed before it;
--   * the NOTIFY is queued in the inserting transaction: nobody wakes before the commit.
-- outcome is 'created', 'duplicate' (with the original event), 'queue_full' or 'address_gone'.

CREATE FUNCTION ra_append_event(
  p_address_id TEXT, p_id TEXT, p_type TEXT, p_source TEXT, p_data TEXT, p_metadata TEXT,
  p_dedupe_key TEXT, p_created_at BIGINT, p_max_events INTEGER, p_channel TEXT)
RETURNS TABLE (
  outcome TEXT, id TEXT, address_id TEXT, sequence BIGINT, type TEXT, source TEXT, data TEXT,
  metadata TEXT, dedupe_key TEXT, created_at BIGINT, acknowledged_at BIGINT)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_last BIGINT;
  v_count INTEGER;
  v_needed INTEGER;
  v_pruned INTEGER := 0;
BEGIN
  SELECT a.last_sequence, a.event_count INTO v_last, v_count FROM addresses a WHERE a.id = p_address_id FOR UPDATE;
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

  IF v_count >= p_max_events THEN
    -- Room is made by pruning the oldest acknowledged events, only if enough of them exist.
    v_needed := v_count - p_max_events + 1;
    IF (SELECT count(*) FROM (SELECT 1 FROM events e WHERE e.address_id = p_address_id
          AND e.acknowledged_at IS NOT NULL LIMIT v_needed) s) < v_needed THEN
      RETURN QUERY SELECT 'queue_full'::TEXT, NULL::TEXT, NULL::TEXT, NULL::BIGINT, NULL::TEXT, NULL::TEXT, NULL::TEXT,
        NULL::TEXT, NULL::TEXT, NULL::BIGINT, NULL::BIGINT;
      RETURN;
    END IF;
    DELETE FROM events e WHERE e.address_id = p_address_id AND e.sequence IN (
      SELECT e2.sequence FROM events e2 WHERE e2.address_id = p_address_id AND e2.acknowledged_at IS NOT NULL
      ORDER BY e2.sequence LIMIT v_needed);
    GET DIAGNOSTICS v_pruned = ROW_COUNT;
  END IF;

  INSERT INTO events (id, address_id, sequence, type, source, data, metadata, dedupe_key, created_at, acknowledged_at)
    VALUES (p_id, p_address_id, v_last + 1, p_type, p_source, p_data, p_metadata, p_dedupe_key, p_created_at, NULL);
  UPDATE addresses a SET last_sequence = v_last + 1, event_count = a.event_count + 1 - v_pruned WHERE a.id = p_address_id;
  PERFORM pg_notify(p_channel, p_address_id);
  RETURN QUERY SELECT 'created'::TEXT, p_id, p_address_id, v_last + 1, p_type, p_source, p_data, p_metadata,
    p_dedupe_key, p_created_at, NULL::BIGINT;
END
$$;
