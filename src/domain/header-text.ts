// Shared by the inbox route and the capture rules, so it lives below both (design.md, "Rooms").
// Node reads header values as latin1, one character per byte, so a UTF-8 header arrives as mojibake:
// an Idempotency-Key "ключ" would never equal the body's dedupe_key "ключ" (409), and would count
// its bytes, not its characters, against the 255-character limit.
import { isUtf8 } from 'node:buffer';

/** The value decoded as UTF-8 when its bytes are UTF-8; else as it came (latin1). */
export function utf8HeaderValue(value: string): string {
  if (!/[\u0080-\u00ff]/.test(value)) return value;
  const bytes = Buffer.from(value, 'latin1');
  return isUtf8(bytes) ? bytes.toString('utf8') : value;
}
