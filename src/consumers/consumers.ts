// Named consumers (design.md, "Reading without loss", Telegram getUpdates style): a reader gives a name, and the
// server keeps its position. A read without `after` starts after the stored position (0 for a new
// name); a read with `after=N` first stores N, durably, then reads after N. So a reader moves its
// position only by asking for the page after what it has handled: what it has not confirmed is
// read again after a crash (at-least-once), and `after` may also seek back to replay.
// Consumers are independent of acknowledgements.
import { ApiError, notFound } from '../domain/errors.js';
import type { AddressRecord } from '../domain/model.js';
import type { ConsumerPositions, ConsumerRecord } from './consumer-positions.js';

/**
 * A consumer name is a URL path segment (DELETE …/consumers/{name}) that no client may rewrite: `.`
 * and `..` (and names of dots only) are dot segments, which curl and fetch resolve away, so
 * `DELETE …/consumers/..` would be sent as a DELETE of the address itself. Such names are refused.
 */
export const CONSUMER_NAME_PATTERN = '^(?!\\.+$)[a-z0-9_.:-]{1,64}$';
export const CONSUMER_NAME_RE = new RegExp(CONSUMER_NAME_PATTERN);
const DOTS_ONLY = /^\.+$/;
/** Consumers one address may hold: each is a row, and a position write per page read. */
export const MAX_CONSUMERS_PER_ADDRESS = 100;

/** The name, checked: 400 naming the parameter and the rule. */
export function consumerName(name: unknown, param = "query parameter 'consumer'"): string {
  if (typeof name === 'string' && CONSUMER_NAME_RE.test(name)) return name;
  if (typeof name === 'string' && DOTS_ONLY.test(name)) {
    throw new ApiError(
      'invalid_request',
      `Invalid ${param}: a consumer name may not be only dots (${JSON.stringify(name.slice(0, 80))}): clients rewrite '.' and '..' in a URL path, ` +
        'so such a name could not be deleted, or its DELETE would reach the address. Use a name with a letter or digit (e.g. worker-1).',
    );
  }
  throw new ApiError(
    'invalid_request',
    `Invalid ${param}: a consumer name is 1-64 characters of a-z, 0-9, _ . : -, not only dots (e.g. worker-1 or forward:localhost:3000); got ${JSON.stringify(String(name).slice(0, 80))}.`,
  );
}

export class Consumers {
  constructor(
    private readonly positions: ConsumerPositions,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Where a read by consumer `name` starts. With `after`, it is stored first (durably); without,
   * the stored position (a new name is stored at 0, so it is listed).
   */
  async start(address: AddressRecord, name: string, after: number | undefined): Promise<number> {
    if (after === undefined) {
      const stored = await this.positions.position(address.id, name);
      if (stored !== null) return stored;
    }
    const cursor = after ?? 0;
    const result = await this.positions.seek(address.id, name, cursor, this.now(), MAX_CONSUMERS_PER_ADDRESS);
    if (result === 'address_gone') throw notFound('Address');
    if (result === 'too_many') {
      throw new ApiError(
        'too_many_consumers',
        `This address already has ${MAX_CONSUMERS_PER_ADDRESS} consumers: delete one (DELETE /api/v1/addresses/{id}/consumers/{name}) or reuse a name.`,
      );
    }
    return cursor;
  }

  list(address: AddressRecord): Promise<ConsumerRecord[]> {
    return this.positions.list(address.id);
  }

  async remove(address: AddressRecord, name: string): Promise<void> {
    if (!(await this.positions.remove(address.id, name))) throw notFound('Consumer');
  }
}
