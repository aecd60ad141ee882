-- Approvals (design.md, "Approvals"), as in the SQLite schema beside it. Every change of an approval's
-- state goes through ra_approval_step, which appends its event (ra_append_event) and changes the
-- row in one transaction, under the address row's lock and then the approval row's (the order a
-- cascade from deleting the address takes too, so the two cannot deadlock). Two instances racing
-- to record an answer, cancel or expire are serialized on those locks, and the loser finds the
-- row no longer pending: approval.expired is appended once, and never more than max_responses answers.
CREATE TABLE approvals (
  id            TEXT    PRIMARY KEY,
  address_id    TEXT    NOT NULL REFERENCES addresses (id) ON DELETE CASCADE,
  secret_hash   BYTEA   NOT NULL,
  question      TEXT    NOT NULL,
  details       TEXT,
  options       TEXT    NOT NULL,
  fields        TEXT    NOT NULL,
  max_responses INTEGER NOT NULL,
  responses     INTEGER NOT NULL DEFAULT 0,
  status        TEXT    NOT NULL,
  created_at    BIGINT  NOT NULL,
  expires_at    BIGINT  NOT NULL,
  closed_at     BIGINT
);

CREATE INDEX approvals_address ON approvals (address_id);
CREATE INDEX approvals_due ON approvals (expires_at) WHERE status = 'pending';

CREATE TABLE approval_answers (
  approval_id TEXT    NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
  n           INTEGER NOT NULL,
  event_id    TEXT    NOT NULL,
  answer      TEXT    NOT NULL,
  PRIMARY KEY (approval_id, n)
);

-- p_step: 'respond' (an answer: pending, not expired, fewer than max_responses answers),
-- 'cancel' (pending, not expired) or 'expire' (pending, past expiry). The outcome is
-- ra_append_event's, or 'refused' when the step's condition does not hold, or 'closed' when an
-- expiry found answers already recorded (no event: only an approval nobody answered gets approval.expired).
CREATE FUNCTION ra_approval_step(
  p_step TEXT, p_approval_id TEXT, p_address_id TEXT, p_id TEXT, p_type TEXT, p_source TEXT, p_data TEXT,
  p_created_at BIGINT, p_max_events INTEGER, p_max_bytes BIGINT, p_channel TEXT)
RETURNS TABLE (
  outcome TEXT, id TEXT, address_id TEXT, sequence BIGINT, type TEXT, source TEXT, data TEXT,
  metadata TEXT, dedupe_key TEXT, created_at BIGINT, acknowledged_at BIGINT)
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
      NULL::TEXT, NULL::TEXT, NULL::BIGINT, NULL::BIGINT;
    RETURN;
  END IF;
  IF p_step = 'expire' AND v_responses > 0 THEN
    UPDATE approvals ap SET status = 'decided', closed_at = v_expires WHERE ap.id = p_approval_id;
    RETURN QUERY SELECT 'closed'::TEXT, NULL::TEXT, NULL::TEXT, NULL::BIGINT, NULL::TEXT, NULL::TEXT, NULL::TEXT,
      NULL::TEXT, NULL::TEXT, NULL::BIGINT, NULL::BIGINT;
    RETURN;
  END IF;
  -- chr(1): stored behind a control character no inbox sender's key can hold (domain/dedupe-key.ts).
  v_key := chr(1) || 'approval:' || p_approval_id || ':' ||
    CASE p_step WHEN 'respond' THEN (v_responses + 1)::TEXT WHEN 'cancel' THEN 'cancelled' ELSE 'expired' END;
  SELECT * INTO r FROM ra_append_event(p_address_id, p_id, p_type, p_source, p_data, NULL, v_key, p_created_at,
    p_max_events, p_max_bytes, p_channel);
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
    r.created_at, r.acknowledged_at;
END
$$;
