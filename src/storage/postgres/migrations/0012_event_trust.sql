-- Every event's provenance (design.md, "Trust: what an agent may believe"; src/domain/trust.ts): JSON
-- text written only by the service, `{"ingress","verified","method","identity","reason"}`, as in the
-- SQLite schema beside it. Events stored before this migration get it from what the service itself
-- recorded, and only where that proves the way in: a key in the email namespace (chr(1) 'email:')
-- was written by the SMTP listener, one in the approval namespace by an approval step (no inbox key
-- can hold a control character), and bytes stored beside an event only by the capture URL or the
-- SMTP listener. Any other event may have come from the inbox URL, whose sender can write a
-- capture's or a mail's whole shape (data.signature, data.authentication), so it is an inbox
-- delivery: verified null.
ALTER TABLE events ADD COLUMN trust TEXT NOT NULL DEFAULT '{"ingress":"inbox","verified":null,"method":null,"identity":null,"reason":"stored before this service recorded provenance, by a way in it cannot tell now: treated as an inbox delivery, nothing about the sender was checked"}';

UPDATE events SET trust = CASE
    WHEN right(dedupe_key, 8) = ':expired' OR right(dedupe_key, 10) = ':cancelled'
      THEN '{"ingress":"service","verified":true,"method":null,"identity":null,"reason":null}'
    ELSE '{"ingress":"approval","verified":true,"method":"approval_link","identity":null,"reason":null}'
  END
  WHERE left(dedupe_key, 10) = chr(1) || 'approval:';

UPDATE events e SET trust = CASE
    WHEN a.dmarc = 'pass' THEN json_build_object(
      'ingress', 'email', 'verified', true, 'method', 'dmarc',
      'identity', lower(substring(a.from_address FROM '@([^@]*)$')), 'reason', NULL)::text
    ELSE json_build_object(
      'ingress', 'email', 'verified', CASE WHEN a.dmarc = 'fail' THEN false END,
      'method', CASE WHEN a.dmarc = 'fail' THEN 'dmarc' END, 'identity', NULL,
      'reason', 'DMARC result is ' || coalesce(a.dmarc, 'none') || ', not pass: the From address is not proven')::text
  END
  FROM (SELECT address_id, sequence, d #>> '{authentication,dmarc}' AS dmarc, d #>> '{from,address}' AS from_address
        FROM (SELECT address_id, sequence,
                CASE WHEN strpos(data, '\u0000') = 0 THEN data::jsonb ELSE replace(data, '\u0000', '\ufffd')::jsonb END AS d
              FROM events WHERE left(dedupe_key, 7) = chr(1) || 'email:') AS mail) AS a
  WHERE e.address_id = a.address_id AND e.sequence = a.sequence;

UPDATE events e SET trust = json_build_object(
    'ingress', 'capture',
    'verified', CASE jsonb_typeof(c.d #> '{signature,verified}') WHEN 'boolean' THEN (c.d #>> '{signature,verified}')::boolean END,
    'method', c.d #>> '{signature,scheme}',
    'identity', CASE WHEN c.d #>> '{signature,verified}' = 'true' THEN c.d #>> '{signature,scheme}' END,
    'reason', CASE WHEN c.d #>> '{signature,verified}' = 'true' THEN NULL ELSE c.d #>> '{signature,reason}' END)::text
  FROM (SELECT address_id, sequence,
          CASE WHEN strpos(data, '\u0000') = 0 THEN data::jsonb ELSE replace(data, '\u0000', '\ufffd')::jsonb END AS d
        FROM events ev
        WHERE (dedupe_key IS NULL OR left(dedupe_key, 1) <> chr(1))
          AND EXISTS (SELECT 1 FROM event_blobs b WHERE b.address_id = ev.address_id AND b.sequence = ev.sequence)) AS c
  WHERE e.address_id = c.address_id AND e.sequence = c.sequence
    AND jsonb_typeof(c.d -> 'signature') = 'object' AND c.d ? 'remote_ip';

-- The append functions take the trust and return it with the event.
DROP FUNCTION ra_approval_step(TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, BIGINT, INTEGER, BIGINT, TEXT);
DROP FUNCTION ra_append_events(TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], BIGINT[], INTEGER, BIGINT, TEXT);
DROP FUNCTION ra_append_event(TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, BIGINT, INTEGER, BIGINT, TEXT);
DROP FUNCTION ra_append_event(TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, BIGINT, INTEGER, BIGINT, TEXT, BIGINT);

CREATE FUNCTION ra_append_event(
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
    SELECT s.sequence, s.n, s.b INTO v_upto, v_pruned, v_pruned_bytes FROM (
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
    DELETE FROM events e WHERE e.address_id = p_address_id AND e.acknowledged_at IS NOT NULL AND e.sequence <= v_upto;
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

CREATE FUNCTION ra_append_events(
  p_address_ids TEXT[], p_ids TEXT[], p_types TEXT[], p_sources TEXT[], p_datas TEXT[], p_metadatas TEXT[],
  p_dedupe_keys TEXT[], p_trusts TEXT[], p_created_ats BIGINT[], p_max_events INTEGER, p_max_bytes BIGINT, p_channel TEXT)
RETURNS TABLE (
  ord INTEGER, outcome TEXT, id TEXT, address_id TEXT, sequence BIGINT, type TEXT, source TEXT, data TEXT,
  metadata TEXT, dedupe_key TEXT, trust TEXT, created_at BIGINT, acknowledged_at BIGINT)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  FOR i IN 1 .. coalesce(array_length(p_ids, 1), 0) LOOP
    RETURN QUERY SELECT i, r.* FROM ra_append_event(p_address_ids[i], p_ids[i], p_types[i], p_sources[i], p_datas[i],
      p_metadatas[i], p_dedupe_keys[i], p_trusts[i], p_created_ats[i], p_max_events, p_max_bytes, p_channel, 0::BIGINT) r;
  END LOOP;
END
$$;

CREATE FUNCTION ra_approval_step(
  p_step TEXT, p_approval_id TEXT, p_address_id TEXT, p_id TEXT, p_type TEXT, p_source TEXT, p_data TEXT, p_trust TEXT,
  p_created_at BIGINT, p_max_events INTEGER, p_max_bytes BIGINT, p_channel TEXT)
RETURNS TABLE (
  outcome TEXT, id TEXT, address_id TEXT, sequence BIGINT, type TEXT, source TEXT, data TEXT,
  metadata TEXT, dedupe_key TEXT, trust TEXT, created_at BIGINT, acknowledged_at BIGINT)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_status TEXT;
  v_responses INTEGER;
  v_max INTEGER;
  v_expires BIGINT;
  v_key TEXT;
  r RECORD;
BEGIN
  PERFORM 1 FROM addresses a WHERE a.id = p_address_id FOR UPDATE;
  SELECT ap.status, ap.responses, ap.max_responses, ap.expires_at INTO v_status, v_responses, v_max, v_expires
    FROM approvals ap WHERE ap.id = p_approval_id AND ap.address_id = p_address_id FOR UPDATE;
  IF NOT FOUND OR v_status <> 'pending'
     OR (p_step = 'respond' AND (v_expires <= p_created_at OR v_responses >= v_max))
     OR (p_step = 'cancel' AND v_expires <= p_created_at)
     OR (p_step = 'expire' AND v_expires > p_created_at) THEN
    RETURN QUERY SELECT 'refused'::TEXT, NULL::TEXT, NULL::TEXT, NULL::BIGINT, NULL::TEXT, NULL::TEXT, NULL::TEXT,
      NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::BIGINT, NULL::BIGINT;
    RETURN;
  END IF;
  IF p_step = 'expire' AND v_responses > 0 THEN
    UPDATE approvals ap SET status = 'decided', closed_at = v_expires WHERE ap.id = p_approval_id;
    RETURN QUERY SELECT 'closed'::TEXT, NULL::TEXT, NULL::TEXT, NULL::BIGINT, NULL::TEXT, NULL::TEXT, NULL::TEXT,
      NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::BIGINT, NULL::BIGINT;
    RETURN;
  END IF;
  -- chr(1): stored behind a control character no inbox sender's key can hold (domain/dedupe-key.ts).
  v_key := chr(1) || 'approval:' || p_approval_id || ':' ||
    CASE p_step WHEN 'respond' THEN (v_responses + 1)::TEXT WHEN 'cancel' THEN 'cancelled' ELSE 'expired' END;
  SELECT * INTO r FROM ra_append_event(p_address_id, p_id, p_type, p_source, p_data, NULL, v_key, p_trust, p_created_at,
    p_max_events, p_max_bytes, p_channel, 0::BIGINT);
  IF r.outcome = 'created' THEN
    IF p_step = 'respond' THEN
      UPDATE approvals ap SET responses = v_responses + 1,
        status = CASE WHEN v_responses + 1 >= v_max THEN 'decided' ELSE 'pending' END,
        closed_at = CASE WHEN v_responses + 1 >= v_max THEN p_created_at ELSE NULL END
        WHERE ap.id = p_approval_id;
      INSERT INTO approval_answers (approval_id, n, event_id, answer) VALUES (p_approval_id, v_responses + 1, p_id, p_data);
    ELSE
      UPDATE approvals ap SET status = CASE p_step WHEN 'cancel' THEN 'cancelled' ELSE 'expired' END, closed_at = p_created_at
        WHERE ap.id = p_approval_id;
    END IF;
  END IF;
  RETURN QUERY SELECT r.outcome, r.id, r.address_id, r.sequence, r.type, r.source, r.data, r.metadata, r.dedupe_key,
    r.trust, r.created_at, r.acknowledged_at;
END
$$;
