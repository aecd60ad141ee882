-- Approvals inside the address's bounds (design.md, "Approvals"): an approval's bytes (its question,
-- details, options and fields as stored, in UTF-8: approval-model.ts, approvalBytes) count toward
-- MAX_BYTES_PER_ADDRESS in event_bytes beside the events, for as long as it is stored, and an address
-- holds at most MAX_PENDING_APPROVALS pending approvals. Before this an address could hold any number
-- of approvals outside its quota (1,000 of 15.8 KB on an address of a 1 MiB quota).

-- What the approvals stored before this hold is counted now.
UPDATE addresses a SET event_bytes = a.event_bytes + s.b
  FROM (SELECT address_id, sum(octet_length(question) + coalesce(octet_length(details), 0) + octet_length(options) + octet_length(fields)) AS b
        FROM approvals GROUP BY address_id) s
  WHERE a.id = s.address_id;

-- The pending count per address reads at most MAX_PENDING_APPROVALS index entries.
CREATE INDEX approvals_pending_address ON approvals (address_id) WHERE status = 'pending';

-- Room for a new approval of p_size bytes, under the address row's lock (the lock appends take, so
-- creates on every instance are serialized per address and never pass either bound): 'address_gone',
-- 'too_many' (p_max_pending pending already), 'queue_full' (pruning acknowledged events cannot make
-- room), or 'created', after pruning the shortest run of oldest acknowledged events that makes room
-- and adding p_size to event_bytes. The caller inserts the approval in the same statement.
CREATE FUNCTION ra_approval_room(p_address_id TEXT, p_size BIGINT, p_max_pending BIGINT, p_max_bytes BIGINT)
RETURNS TEXT LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_bytes BIGINT;
  v_pending BIGINT;
  v_upto BIGINT;
  v_pruned INTEGER := 0;
  v_pruned_bytes BIGINT := 0;
BEGIN
  SELECT a.event_bytes INTO v_bytes FROM addresses a WHERE a.id = p_address_id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN 'address_gone';
  END IF;
  SELECT count(*) INTO v_pending FROM approvals p WHERE p.address_id = p_address_id AND p.status = 'pending';
  IF v_pending >= p_max_pending THEN
    RETURN 'too_many';
  END IF;
  IF v_bytes + p_size > p_max_bytes THEN
    SELECT s.sequence INTO v_upto FROM (
      SELECT e.sequence, sum(octet_length(e.data) + coalesce(octet_length(e.metadata), 0) + e.blob_bytes) OVER w AS b
      FROM events e WHERE e.address_id = p_address_id AND e.acknowledged_at IS NOT NULL
      WINDOW w AS (ORDER BY e.sequence)) s
    WHERE s.b >= v_bytes + p_size - p_max_bytes
    ORDER BY s.sequence LIMIT 1;
    IF NOT FOUND THEN
      RETURN 'queue_full';
    END IF;
    -- What this statement deletes is what it subtracts (as in ra_append_event, migration 0016).
    WITH gone AS (
      DELETE FROM events e WHERE e.address_id = p_address_id AND e.acknowledged_at IS NOT NULL AND e.sequence <= v_upto
      RETURNING octet_length(e.data) + coalesce(octet_length(e.metadata), 0) + e.blob_bytes AS b
    )
    SELECT count(*)::INTEGER, coalesce(sum(g.b), 0)::BIGINT INTO v_pruned, v_pruned_bytes FROM gone g;
  END IF;
  UPDATE addresses a SET event_count = a.event_count - v_pruned, event_bytes = a.event_bytes + p_size - v_pruned_bytes
    WHERE a.id = p_address_id;
  RETURN 'created';
END
$$;
