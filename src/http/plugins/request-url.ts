// What the router sees of a request's URL: undecodable path segments made literal, and query
// strings parsed without coercion. Both keep every request on its route, so the route's own checks
// (credential first, design.md, "Errors") answer it instead of the router.

/**
 * A path segment that cannot be percent-decoded ("%ff", "%zz", a lone "%") made the router answer
 * 404 before any route ran, so `/events/%ff/ack` with a bad bearer got 404 instead of 401. Such a
 * segment is re-escaped to stand for its literal text, which is never a valid id: the route's
 * credential check runs first, then its id check answers 404.
 */
export function escapeUndecodableSegments(url: string): string {
  if (!url.includes('%')) return url;
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  let changed = false;
  const segments = path.split('/').map((segment) => {
    if (!segment.includes('%')) return segment;
    try {
      decodeURIComponent(segment);
      return segment;
    } catch {
      changed = true;
      return segment.replace(/%/g, '%25');
    }
  });
  return changed ? segments.join('/') + (q === -1 ? '' : url.slice(q)) : url;
}

/**
 * Query strings: only plain decimal digits become numbers, so the schema's integer type refuses
 * "1.5", "0x10", "1e2" or " 5" instead of coercing them, and a repeated parameter stays an array.
 * Digits become a number only when JavaScript holds that number exactly (up to
 * Number.MAX_SAFE_INTEGER); a larger one stays text and its error says the range.
 */
export function parseQuery(qs: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of new URLSearchParams(qs)) {
    let value: unknown = v;
    if (/^-?\d{1,16}$/.test(v)) {
      const n = Number(v);
      if (Number.isSafeInteger(n)) value = n;
    }
    const prev = out[k];
    // Appended in place: copying the array on each repeat made a 14 KB URL repeating one key quadratic.
    if (prev === undefined) out[k] = value;
    else if (Array.isArray(prev)) prev.push(value);
    else out[k] = [prev, value];
  }
  return out;
}
