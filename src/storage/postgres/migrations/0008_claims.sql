-- Claims (design.md, "Claims"): several workers share one address, each event leased to one of them
-- at a time. An event is claimable when it is not acknowledged, not dead, holds no live lease
-- (lease_expires_at NULL or past) and is not delayed (available_at NULL or past): the claim query
-- decides from these columns alone, so redelivery after a lease runs out needs no background job.
-- lease_id stays on the row after its lease ends: it is the fencing token the last claim handed
-- out, and only that one may still ack, extend or nack.
ALTER TABLE events ADD COLUMN delivery_count INTEGER NOT NULL DEFAULT 0;  -- claims made of it so far
ALTER TABLE events ADD COLUMN max_deliveries INTEGER;                     -- of the claim that leased it last
ALTER TABLE events ADD COLUMN lease_id TEXT;
ALTER TABLE events ADD COLUMN lease_expires_at BIGINT;                    -- epoch ms; NULL once nacked
ALTER TABLE events ADD COLUMN available_at BIGINT;                        -- epoch ms; a delayed nack's end
ALTER TABLE events ADD COLUMN dead_at BIGINT;                             -- epoch ms; never claimed again
ALTER TABLE events ADD COLUMN dead_reason TEXT;

-- The events a claim may look at, oldest first: acknowledged and dead ones leave the index.
CREATE INDEX events_open ON events (address_id, sequence) WHERE acknowledged_at IS NULL AND dead_at IS NULL;
-- state=dead listings.
CREATE INDEX events_dead ON events (address_id, sequence) WHERE dead_at IS NOT NULL;
