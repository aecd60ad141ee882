// The UTF-8 bytes of JSON.stringify(s), counted without building it: deciding whether a body fits
// inline must not itself cost a 6x copy (a control byte is escaped as six characters, \u0001).

export function jsonStringBytes(s: string): number {
  let n = 2;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) {
      if (c === 0x22 || c === 0x5c || c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d) n += 2;
      else n += c < 0x20 ? 6 : 1;
    } else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdfff) {
      const paired = c <= 0xdbff ? (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00 : (s.charCodeAt(i - 1) & 0xfc00) === 0xd800;
      n += paired ? 2 : 6;
    } else n += 3;
  }
  return n;
}

/** The bytes of a base64 JSON string of `n` bytes, quotes included. */
export const base64JsonBytes = (n: number): number => 4 * Math.ceil(n / 3) + 2;
