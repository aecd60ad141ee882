// DELIVERY_RATE_LIMIT_PER_IP per DELIVERY_RATE_PER_IP_WINDOW_SECONDS (design.md, "Operating a public
// instance"): deliveries per client key (an IPv4 address, an IPv6 client by its IPV6_PREFIX_BITS
// prefix: domain/client-key.ts) across all addresses, over the inbox, the capture URL and SMTP
// together. Counted in the store's rate windows (domain/rate-window.ts), like the create limit, so
// every instance on one database shares one budget per client: behind a load balancer a sender's
// requests land on any instance, and a per-process count would let it send N times the limit.
import { clientKey } from '../domain/client-key.js';
import type { Store } from '../domain/ports.js';

export interface ClientDeliveryLimitOptions {
  limit: number;
  windowSeconds: number;
  ipv6PrefixBits: number;
}

export class ClientDeliveryLimit {
  constructor(
    private readonly store: Store,
    readonly opts: ClientDeliveryLimitOptions,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one delivery from `ip`: undefined when allowed, else the whole seconds to wait. A refused delivery does not count. */
  async take(ip: string): Promise<number | undefined> {
    const decision = await this.store.countRate({
      key: `deliver-client:${clientKey(ip, this.opts.ipv6PrefixBits)}`,
      limit: this.opts.limit,
      windowMs: this.opts.windowSeconds * 1000,
      now: this.now(),
    });
    return decision.allowed ? undefined : decision.retryAfterSeconds;
  }

  /** The refusal's words, for a 429 or an SMTP 451. */
  message(retryAfterSeconds: number): string {
    return (
      `Too many deliveries from your network: at most ${this.opts.limit} per ${this.opts.windowSeconds} s across all addresses ` +
      `(DELIVERY_RATE_LIMIT_PER_IP); retry in ${retryAfterSeconds} s.`
    );
  }
}
