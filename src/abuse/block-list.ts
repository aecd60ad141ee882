// BLOCK_CIDRS (design.md, "Operating a public instance"): IPs and prefixes, IPv4 and IPv6, whose
// creates and deliveries are refused. Parsing and matching are ipaddr.js's (the library Fastify's
// proxy-addr uses), not hand-written: an IPv4-mapped IPv6 peer ("::ffff:192.0.2.1", what a dual-stack
// socket reports for an IPv4 client) is matched as the IPv4 address it is.
import ipaddr from 'ipaddr.js';

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** One entry of BLOCK_CIDRS as a range, or the reason it is not one. */
function parseEntry(entry: string): Range | string {
  try {
    if (entry.includes('/')) {
      const [address, bits] = ipaddr.parseCIDR(entry);
      // "::ffff:192.0.2.0/120" is an IPv4 prefix written the IPv6 way: kept as the IPv4 one.
      if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
        return [(address as ipaddr.IPv6).toIPv4Address(), bits - 96];
      }
      return [address, bits];
    }
    const address = ipaddr.process(entry);
    return [address, address.kind() === 'ipv4' ? 32 : 128];
  } catch {
    return `"${entry}" is neither an IP address nor a prefix such as 203.0.113.0/24 or 2001:db8::/32`;
  }
}

/**
 * BLOCK_CIDRS as written (comma- or space-separated): the entries, or the first bad one's reason.
 * config.ts calls this at boot, so a typo names the variable instead of blocking nothing.
 */
export function parseBlockCidrs(text: string): { entries: string[] } | { error: string } {
  const entries = text.split(/[\s,]+/).filter((e) => e !== '');
  for (const entry of entries) {
    const range = parseEntry(entry);
    if (typeof range === 'string') return { error: range };
  }
  return { entries };
}

export class BlockList {
  private readonly v4: Range[] = [];
  private readonly v6: Range[] = [];

  constructor(entries: readonly string[]) {
    for (const entry of entries) {
      const range = parseEntry(entry);
      if (typeof range === 'string') throw new Error(range);
      (range[0].kind() === 'ipv4' ? this.v4 : this.v6).push(range);
    }
  }

  get size(): number {
    return this.v4.length + this.v6.length;
  }

  /** Whether a peer's IP (as the socket or a trusted proxy reports it) is in the list; a string that is no IP is not. */
  has(ip: string): boolean {
    let address: ipaddr.IPv4 | ipaddr.IPv6;
    try {
      address = ipaddr.process(ip.includes('%') ? ip.slice(0, ip.indexOf('%')) : ip);
    } catch {
      return false;
    }
    const ranges = address.kind() === 'ipv4' ? this.v4 : this.v6;
    for (const range of ranges) if (address.match(range)) return true;
    return false;
  }
}
