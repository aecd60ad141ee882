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
  // decoders reject a page holding it. The reviver sees every number once as it is parsed.
  let nonFinite = false;
  let value: unknown;
  try {
    value = JSON.parse(json, (_key, v: unknown) => {
      if (typeof v === 'number' && !Number.isFinite(v)) nonFinite = true;
      return v;
    });
  } catch {
    return null;
  }
  if (nonFinite) return null;
  // Line breaks between tokens become spaces (the only place JSON text may hold them): every read
  // path, SSE frames included, then carries the very bytes GET returns, digits and all.
  return { json: json.replace(/[\r\n]/g, ' '), value };
}

/** Strings longer than this are left out of the value handed back for recognition (no provider's type, id or challenge is this long). */
const MAX_RECOGNISED_STRING = 64 * 1024;

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
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const v = recognisable((value as Record<string, unknown>)[key], depth + 1);
    if (v !== undefined) Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true });
  }
  return out;
}
