// The key a per-client limit counts under (the create rate limit, the SMTP per-IP connection cap).
// An IPv4 client is its address. An IPv6 client is its network prefix (IPV6_PREFIX_BITS, /64 by
// default): one subscriber is routinely given a whole /64 (and often a /56 or /48), so keying on
// the exact address would give its owner 2^64 separate budgets.
import { isIPv4, isIPv6 } from 'node:net';

export const DEFAULT_IPV6_PREFIX_BITS = 64;

/** The eight 16-bit groups of an IPv6 address ("::" expanded, an embedded IPv4 tail read as two groups). */
function ipv6Groups(ip: string): number[] {
  let text = ip;
  const zone = text.indexOf('%');
  if (zone !== -1) text = text.slice(0, zone);
  const lastColon = text.lastIndexOf(':');
  const last = text.slice(lastColon + 1);
  if (isIPv4(last)) {
    const [a, b, c, d] = last.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const parse = (s: string) => (s === '' ? [] : s.split(':').map((g) => Number.parseInt(g, 16)));
  const gap = text.indexOf('::');
  if (gap === -1) return parse(text);
  const head = parse(text.slice(0, gap));
  const tail = parse(text.slice(gap + 2));
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

/**
 * The client key of an IP address: IPv4 (and IPv4-mapped IPv6, "::ffff:1.2.3.4") as the IPv4
 * address; IPv6 as "<first prefixBits bits, as 8 hex groups>/<prefixBits>"; anything else as it came.
 */
export function clientKey(ip: string, prefixBits: number = DEFAULT_IPV6_PREFIX_BITS): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  if (!isIPv6(ip) || prefixBits >= 128) return ip;
  const groups = ipv6Groups(ip);
  const out: string[] = [];
  for (let i = 0; i < 8; i++) {
    const bits = Math.max(0, Math.min(16, prefixBits - i * 16));
    const mask = bits === 0 ? 0 : (0xffff << (16 - bits)) & 0xffff;
    out.push(((groups[i] ?? 0) & mask).toString(16));
  }
  return `${out.join(':')}/${prefixBits}`;
}
