// The SQLite store's addresses: creation under the create limit's rate window, lookups (the row is
// cached, sqlite-read-cache.ts), signing secrets, deletion and the expiry sweep. Every write waits for
// an fdatasync (durable) before it resolves, except a rate window's count (countRate).
import type { AddressRecord, RateDecision } from '../../domain/model.js';
import { countAttempt, staleRateWindowsBefore } from '../../domain/rate-window.js';
import { toAddress } from '../rows.js';
import type { SqliteParts } from './sqlite-statements.js';

type Rate = { key: string; limit: number; windowMs: number; now: number };

export class SqliteAddresses {
  constructor(private readonly s: SqliteParts) {}

  /** One attempt against the rate window of `rate.key` (domain/rate-window.ts), inside the caller's transaction. */
  private count(rate: Rate): RateDecision {
    const { q } = this.s;
    const w = q.rateWindow.get(rate.key);
    const attempt = countAttempt(w && { windowStart: w.window_start, count: w.count }, rate);
    if (!attempt.allowed) return attempt;
    q.upsertRateWindow.run(rate.key, attempt.row.windowStart, attempt.row.count);
    return { allowed: true };
  }

  async create(a: AddressRecord, rate: Rate): Promise<RateDecision> {
    const decision = this.s.db
      .transaction((): RateDecision => {
        const counted = this.count(rate);
        if (counted.allowed) this.s.q.insertAddress.run({ ...a, createdIp: a.createdIp ?? null });
        return counted;
      })
      .immediate();
    if (decision.allowed) await this.s.durable();
    return decision;
  }

  /** Not awaited to disk: a rate window lost to a power cut only lets a few more deliveries in. */
  countRate(rate: Rate): RateDecision {
    return this.s.db.transaction(() => this.count(rate)).immediate();
  }

  get(id: string): AddressRecord | null {
    const { cache, q } = this.s;
    cache.checkExternalChanges();
    const held = cache.address(id);
    if (held) return held;
    const r = q.getAddress.get(id);
    if (!r) return null;
    const a = Object.freeze(toAddress(r));
    cache.rememberAddress(id, a);
    return a;
  }

  bySlug(slug: string): AddressRecord | null {
    const r = this.s.q.getAddressBySlug.get(slug);
    return r ? toAddress(r) : null;
  }

  signingSecrets(addressId: string): Buffer | null | undefined {
    const r = this.s.q.signingSecrets.get(addressId);
    return r === undefined ? undefined : r.signing_secrets;
  }

  async setSigningSecrets(addressId: string, sealed: Buffer | null): Promise<boolean> {
    const changed = this.s.q.setSigningSecrets.run(sealed, addressId).changes > 0;
    await this.s.durable();
    return changed;
  }

  async delete(id: string): Promise<boolean> {
    const deleted = this.s.q.deleteAddress.run(id).changes > 0;
    this.s.forget(id, true);
    await this.s.durable();
    return deleted;
  }

  async deleteExpired(cutoff: number, batchSize: number): Promise<string[]> {
    const { db, q } = this.s;
    const ids = db
      .transaction(() => {
        const ids = q.expiredIds.all(cutoff, batchSize).map((r) => r.id);
        for (const id of ids) q.deleteAddress.run(id);
        // Rate windows older than a day cannot matter to any configured window that still runs.
        q.pruneRateWindows.run(staleRateWindowsBefore(cutoff));
        return ids;
      })
      .immediate();
    for (const id of ids) this.s.forget(id, true);
    await this.s.durable();
    return ids;
  }
}
