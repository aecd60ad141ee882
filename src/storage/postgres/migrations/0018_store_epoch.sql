-- The store's epoch (design.md, "Store epoch"), as in the SQLite migration beside it: a random id
-- made with the store; `return-address restore --new-epoch` replaces it after a pg_restore.
CREATE TABLE store_epoch (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  epoch TEXT NOT NULL
);
INSERT INTO store_epoch (id, epoch) VALUES (1, replace(gen_random_uuid()::text, '-', ''));
