-- Group commit for PostgreSQL: the deliveries an instance receives while its previous batch is
-- committing are appended in ONE transaction (one commit flush for all of them), each exactly as
-- ra_append_event appends it, in array order. The caller sorts a batch by address id (stably), so
-- every transaction takes address row locks in the same order and batches on several instances
-- cannot deadlock.

CREATE FUNCTION ra_append_events(
  p_address_ids TEXT[], p_ids TEXT[], p_types TEXT[], p_sources TEXT[], p_datas TEXT[], p_metadatas TEXT[],
  p_dedupe_keys TEXT[], p_created_ats BIGINT[], p_max_events INTEGER, p_channel TEXT)
RETURNS TABLE (
  ord INTEGER, outcome TEXT, id TEXT, address_id TEXT, sequence BIGINT, type TEXT, source TEXT, data TEXT,
  metadata TEXT, dedupe_key TEXT, created_at BIGINT, acknowledged_at BIGINT)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  FOR i IN 1 .. coalesce(array_length(p_ids, 1), 0) LOOP
    RETURN QUERY SELECT i, r.* FROM ra_append_event(p_address_ids[i], p_ids[i], p_types[i], p_sources[i], p_datas[i],
      p_metadatas[i], p_dedupe_keys[i], p_created_ats[i], p_max_events, p_channel) r;
  END LOOP;
END
$$;
