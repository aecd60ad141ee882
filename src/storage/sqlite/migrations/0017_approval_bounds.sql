-- Approvals inside the address's bounds (design.md, "Approvals"): an approval's bytes (its question,
-- details, options and fields as stored, in UTF-8: approval-model.ts, approvalBytes) count toward
-- MAX_BYTES_PER_ADDRESS in event_bytes beside the events, for as long as it is stored, and an address
-- holds at most MAX_PENDING_APPROVALS pending approvals (sqlite-approvals.ts).

-- What the approvals stored before this hold is counted now. The row's counters stay those of its
-- events up to last_sequence plus its approvals (sqlite-queue-counters.ts).
UPDATE addresses SET event_bytes = event_bytes + (
  SELECT ifnull(sum(length(CAST(question AS BLOB)) + ifnull(length(CAST(details AS BLOB)), 0) + length(CAST(options AS BLOB)) + length(CAST(fields AS BLOB))), 0)
  FROM approvals p WHERE p.address_id = addresses.id);

-- The pending count per address reads at most MAX_PENDING_APPROVALS index entries.
CREATE INDEX approvals_pending_address ON approvals (address_id) WHERE status = 'pending';
