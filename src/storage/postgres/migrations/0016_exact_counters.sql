-- Exact counters (design.md, "The queue"): an append's pruning subtracts exactly the events its DELETE
-- removed. Acks do not lock the address row, and each statement of a function sees the commits made
-- before it started: the run of acknowledged events is measured by one statement and deleted by the
-- next, so an ack committed in between was deleted without being subtracted, and the address's
-- event_count and event_bytes stayed too high for good (the address refused deliveries with room
-- left). The DELETE now counts what it removes (RETURNING), in the same statement.
CREATE OR REPLACE FUNCTION ra_append_event(
  p_address_id TEXT, p_id TEXT, p_type TEXT, p_source TEXT, p_data TEXT, p_metadata TEXT,
  p_dedupe_key TEXT, p_trust TEXT, p_created_at BIGINT, p_max_events INTEGER, p_max_bytes BIGINT, p_channel TEXT, p_blob_bytes BIGINT)
RETURNS TABLE (
  outcome TEXT, id TEXT, address_id TEXT, sequence BIGINT, type TEXT, source TEXT, data TEXT,
  metadata TEXT, dedupe_key TEXT, trust TEXT, created_at BIGINT, acknowledged_at BIGINT)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_last BIGINT;
  v_count INTEGER;
  v_bytes BIGINT;
  v_size BIGINT := octet_length(p_data) + coalesce(octet_length(p_metadata), 0) + p_blob_bytes;
  v_upto BIGINT;
  v_pruned INTEGER := 0;
  v_pruned_bytes BIGINT := 0;
BEGIN
  SELECT a.last_sequence, a.event_count, a.event_bytes INTO v_last, v_count, v_bytes
    FROM addresses a WHERE a.id = p_address_id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'address_gone'::TEXT, NULL::TEXT, NULL::TEXT, NULL::BIGINT, NULL::TEXT, NULL::TEXT, NULL::TEXT,
      NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::BIGINT, NULL::BIGINT;
    RETURN;
  END IF;

  IF p_dedupe_key IS NOT NULL THEN
    RETURN QUERY SELECT 'duplicate'::TEXT, e.id, e.address_id, e.sequence, e.type, e.source, e.data, e.metadata,
      e.dedupe_key, e.trust, e.created_at, e.acknowledged_at
      FROM events e WHERE e.address_id = p_address_id AND e.dedupe_key = p_dedupe_key;
    IF FOUND THEN
      RETURN;
    END IF;
  END IF;

  IF v_count >= p_max_events OR v_bytes + v_size > p_max_bytes THEN
    -- The shortest run of oldest acknowledged events whose removal makes room for both limits.
    SELECT s.sequence INTO v_upto FROM (
      SELECT e.sequence, count(*) OVER w AS n,
             sum(octet_length(e.data) + coalesce(octet_length(e.metadata), 0) + e.blob_bytes) OVER w AS b
      FROM events e WHERE e.address_id = p_address_id AND e.acknowledged_at IS NOT NULL
      WINDOW w AS (ORDER BY e.sequence)) s
    WHERE s.n >= v_count - p_max_events + 1 AND s.b >= v_bytes + v_size - p_max_bytes
    ORDER BY s.sequence LIMIT 1;
    IF NOT FOUND THEN
      RETURN QUERY SELECT 'queue_full'::TEXT, NULL::TEXT, NULL::TEXT, NULL::BIGINT, NULL::TEXT, NULL::TEXT, NULL::TEXT,
        NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::BIGINT, NULL::BIGINT;
      RETURN;
    END IF;
    -- What this statement deletes is what it subtracts: an event acknowledged since the run was
    -- measured may go too (it frees more room, never less), and is counted.
    WITH gone AS (
      DELETE FROM events e WHERE e.address_id = p_address_id AND e.acknowledged_at IS NOT NULL AND e.sequence <= v_upto
      RETURNING octet_length(e.data) + coalesce(octet_length(e.metadata), 0) + e.blob_bytes AS b
    )
    SELECT count(*)::INTEGER, coalesce(sum(g.b), 0)::BIGINT INTO v_pruned, v_pruned_bytes FROM gone g;
  END IF;

  INSERT INTO events (id, address_id, sequence, type, source, data, metadata, dedupe_key, trust, created_at, acknowledged_at, blob_bytes)
    VALUES (p_id, p_address_id, v_last + 1, p_type, p_source, p_data, p_metadata, p_dedupe_key, p_trust, p_created_at, NULL, p_blob_bytes);
  UPDATE addresses a SET last_sequence = v_last + 1, event_count = a.event_count + 1 - v_pruned,
    event_bytes = a.event_bytes + v_size - v_pruned_bytes WHERE a.id = p_address_id;
  PERFORM pg_notify(p_channel, p_address_id);
  RETURN QUERY SELECT 'created'::TEXT, p_id, p_address_id, v_last + 1, p_type, p_source, p_data, p_metadata,
    p_dedupe_key, p_trust, p_created_at, NULL::BIGINT;
END
$$;

-- Consumer names of dots only ('.', '..') are refused from this release on: clients rewrite such a
-- path segment, so DELETE …/consumers/.. reached the address. Any stored before are forgotten here
-- (they could be neither read nor deleted any more, and would hold a place under the cap).
DELETE FROM consumers WHERE name ~ '^\.+$';
