// What claims need from a store (design.md, "Claims"): lease the oldest claimable events of an address,
// and settle one through its lease. Both stores implement it beside the Store (storage/claim-sql.ts,
// storage/*/…-claims.ts; migration 0008), and the composition (src/compose.ts) hands the opened store
// to the ClaimService as this port, so the domain's Store knows nothing of claims.
import type { ClaimBatch, ClaimRequest, Settlement, SettleResult } from './claim-rules.js';

export interface ClaimStore {
  /**
   * Leases the oldest claimable events of the address that pass the filter, after making dead the
   * open events whose final lease ran out; resolves once durable. No two claims, from any instance,
   * ever hold live leases on one event. null: no such address.
   */
  claimEvents(addressId: string, r: ClaimRequest): Promise<ClaimBatch | null>;
  /** Acks, extends or nacks through a lease, only while it is still the event's lease (fencing). */
  settleClaim(addressId: string, eventId: string, leaseId: string, s: Settlement, now: number): Promise<SettleResult>;
}
