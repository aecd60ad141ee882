// A captured JSON body checked and made ready to store (design.md, "Capture URL"): parsed, its nesting
// bounded, any number beyond a 64-bit float refused (stored as broken JSON is: bytes in raw only),
// and line breaks between tokens made spaces. Pure and linear in the text; a large body runs it in
// a worker (json-body-pool.ts), which answers `value` cut to what recognising the sender reads.
import { MAX_VALUE_DEPTH, nestsDeeperThan } from '../domain/json-depth.js';

export interface CheckedJson {
  /** The JSON text to store as data.body. */
  json: string;
  /** The value, for recognising the sender. */
  value: unknown;
}

/** The body's JSON made ready to store, or null when it is not JSON the service stores as such. */
export function checkJsonText(text: string): CheckedJson | null {
  // A byte-order mark is not JSON, but some senders put one first.
  const json = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  // data.body sits one level inside data, whose nesting is bounded like the inbox's: checked on the
  // text first, so a deep body is never parsed.
  if (nestsDeeperThan(json, MAX_VALUE_DEPTH - 1)) return null;
  // A number beyond a 64-bit float (1e999) parses to Infinity: the inbox refuses it, and strict
  // decoders reject a page holding it. Only a number written with a 3-digit exponent or a run of
  // 200 digits can be one, so text without either is parsed plainly; text with either has its
  // numbers walked once after the parse. A reviver did the same for every value of every body, and
  // was most of the cost of a wide one (1.5 M keys: 3.3 s of a worker's time).
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return null;
  }
  if (MAY_BE_NON_FINITE.test(json) && holdsNonFinite(value)) return null;
  // Line breaks between tokens become spaces (the only place JSON text may hold them): every read
  // path, SSE frames included, then carries the very bytes GET returns, digits and all.
  return { json: json.replace(/[\r\n]/g, ' '), value };
}

/**
 * Number text that may parse to a non-finite value: an exponent of three or more digits, or 200
 * digits in a row (a finite mantissa needs over 200 integer digits to overflow with a 2-digit
 * exponent). It may also match inside a string; that only costs the walk.
 */
const MAY_BE_NON_FINITE = /[eE][+-]?\d{3}|\d{200}/;

/** Whether a parsed value holds a non-finite number anywhere: one iterative walk, never the stack. */
export function holdsNonFinite(root: unknown): boolean {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return true;
    } else if (Array.isArray(v)) {
      for (const m of v) stack.push(m);
    } else if (v !== null && typeof v === 'object') {
      for (const key in v) if (Object.hasOwn(v, key)) stack.push((v as Record<string, unknown>)[key]);
    }
  }
  return false;
}

/** Strings longer than this are left out of the value handed back for recognition (no provider's type, id or challenge is this long). */
const MAX_RECOGNISED_STRING = 64 * 1024;
/**
 * Members of one object handed back for recognition, the first ones: a provider's envelope has a
 * few dozen. Handing back all of a body of 1.5 M keys made the event loop rebuild an object of
 * 1.5 M members from the worker's message (3.4 s, /healthz with it).
 */
export const MAX_RECOGNISED_MEMBERS = 1000;

/**
 * What of a value recognising the sender (sender-recognition.ts) and answering a handshake
 * (handshake.ts) read: an object's scalar members, and the scalar members of its objects; arrays and
 * anything deeper are left out. Small, so a worker hands it back cheaply whatever the body's size.
 */
export function recognisable(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return value.length <= MAX_RECOGNISED_STRING ? value : undefined;
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value) || depth >= 2) return undefined;
  const out: Record<string, unknown> = {};
  let kept = 0;
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    if (kept++ >= MAX_RECOGNISED_MEMBERS) break;
    const v = recognisable((value as Record<string, unknown>)[key], depth + 1);
    if (v !== undefined) Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true });
  }
  return out;
}
