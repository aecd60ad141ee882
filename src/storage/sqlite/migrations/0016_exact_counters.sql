-- Consumer names of dots only ('.', '..') are refused from this release on (design.md, "Reading
-- without loss"): clients rewrite such a path segment, so DELETE …/consumers/.. reached the address.
-- Any stored before are forgotten here (they could be neither read nor deleted any more, and would
-- hold a place under the cap).
DELETE FROM consumers WHERE name <> '' AND trim(name, '.') = '';
