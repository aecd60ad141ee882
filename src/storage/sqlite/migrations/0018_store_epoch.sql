-- The store's epoch (design.md, "Store epoch"): a random id made with the store and replaced by
-- `return-address restore`, so a reader can tell that sequences it saw may have been reused.
CREATE TABLE store_epoch (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  epoch TEXT NOT NULL
) STRICT;
INSERT INTO store_epoch (id, epoch) VALUES (1, lower(hex(randomblob(16))));
