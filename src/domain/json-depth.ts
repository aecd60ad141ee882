// Nesting depth of JSON text, measured by one iterative scan before anything recursive (a parser
// building objects, a validator, a serializer) touches the value, so a 10,000-level body costs
// one linear pass and never the stack.

const OPEN_OBJECT = 0x7b; // {
const OPEN_ARRAY = 0x5b; // [
const CLOSE_OBJECT = 0x7d; // }
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \

/** True when the containers in `text` nest deeper than `limit` (strings are skipped). */
export function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > limit) return true;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
    }
  }
  return false;
}

/** Levels of nesting a delivered `data` or `metadata` value may have (design.md, "The queue"). */
export const MAX_VALUE_DEPTH = 64;
/** The request body is one object around them. */
export const MAX_BODY_DEPTH = MAX_VALUE_DEPTH + 1;
