// How many event streams may be open at once (design.md, "Bounded work"): every open stream costs a
// socket, a waiter and its buffered frames, so they are capped per address (MAX_STREAMS_PER_ADDRESS)
// and per client (MAX_STREAMS_PER_CLIENT); one more is 429 too_many_streams with Retry-After. An IPv6
// client is one client per IPV6_PREFIX_BITS prefix (a /64 owner has 2^64 addresses).
import { type Config, TOO_MANY_STREAMS_RETRY_AFTER_SECONDS } from '../config.js';
import { clientKey } from '../domain/client-key.js';
import { ApiError } from '../domain/errors.js';

/** Open streams counted per key, under one cap. */
class StreamCounts {
  private readonly counts = new Map<string, number>();
  constructor(private readonly cap: number) {}
  full(key: string): boolean {
    return (this.counts.get(key) ?? 0) >= this.cap;
  }
  add(key: string): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }
  remove(key: string): void {
    const n = (this.counts.get(key) ?? 1) - 1;
    if (n <= 0) this.counts.delete(key);
    else this.counts.set(key, n);
  }
}

export class StreamLimits {
  private readonly perAddress: StreamCounts;
  private readonly perClient: StreamCounts;

  constructor(private readonly config: Pick<Config, 'maxStreamsPerAddress' | 'maxStreamsPerClient' | 'ipv6PrefixBits'>) {
    this.perAddress = new StreamCounts(config.maxStreamsPerAddress);
    this.perClient = new StreamCounts(config.maxStreamsPerClient);
  }

  /**
   * Throws 429 too_many_streams when the address or the client already holds its cap; otherwise,
   * with `hold` (a stream that stays open, not a HEAD), counts one stream until the returned release.
   */
  admit(addressId: string, ip: string, hold: boolean): () => void {
    const client = clientKey(ip, this.config.ipv6PrefixBits);
    const retry = { 'retry-after': String(TOO_MANY_STREAMS_RETRY_AFTER_SECONDS) };
    if (this.perAddress.full(addressId)) {
      throw new ApiError(
        'too_many_streams',
        `This address already has ${this.config.maxStreamsPerAddress} open event streams (MAX_STREAMS_PER_ADDRESS): ` +
          'close one, or share one stream among your readers.',
        retry,
      );
    }
    if (this.perClient.full(client)) {
      throw new ApiError(
        'too_many_streams',
        `This client already holds ${this.config.maxStreamsPerClient} open event streams (MAX_STREAMS_PER_CLIENT): close some first.`,
        retry,
      );
    }
    if (!hold) return () => {};
    this.perAddress.add(addressId);
    this.perClient.add(client);
    return () => {
      this.perAddress.remove(addressId);
      this.perClient.remove(client);
    };
  }
}
