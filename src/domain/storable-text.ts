// Strings stored as plain text columns may not contain U+0000 (PostgreSQL text cannot hold it) nor
// a lone surrogate (each store would keep a different replacement for it), so one API answers the
// same on every store. Inside data and metadata both are fine: those are stored as JSON text, where
// they are escapes.

/** The rule as a JSON schema pattern, matched with the u flag: surrogate pairs (emoji) pass. */
export const STORABLE_TEXT = '^[^\\u0000\\ud800-\\udfff]*$';

/** The same rule for a check outside a schema. */
export const STORABLE_TEXT_RE = new RegExp(STORABLE_TEXT, 'u');
