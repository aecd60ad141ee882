-- Secret rotation and control bodies of webhook subscriptions (design.md, "MCP, current revision").
-- previous_secret: the signing secret a refresh replaced, sealed like `secret`; until
-- secret_rotated_at + PUSH_ROTATION_GRACE_MS each request is signed with both (Standard Webhooks
-- multi-signature). delivered_epoch: the store epoch the subscription last delivered under; a
-- different one means the store was restored, which an MCP subscription is told with a `gap` body.
ALTER TABLE subscriptions ADD COLUMN previous_secret BYTEA;
ALTER TABLE subscriptions ADD COLUMN secret_rotated_at BIGINT;
ALTER TABLE subscriptions ADD COLUMN delivered_epoch TEXT;
