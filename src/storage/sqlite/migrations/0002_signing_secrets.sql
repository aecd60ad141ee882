-- Signing secrets of the capture URL (design.md, "Capture URL"), sealed: see src/domain/signing-keys.ts.
-- signing_keys: the address's data key sealed under keys derived from its read token and its inbox
-- secret (NULL for addresses created before this migration); signing_secrets: the secrets, as JSON
-- sealed under the data key (NULL when none are set).
ALTER TABLE addresses ADD COLUMN signing_keys BLOB;
ALTER TABLE addresses ADD COLUMN signing_secrets BLOB;
