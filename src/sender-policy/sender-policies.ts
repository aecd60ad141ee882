// The sender policies of addresses over their store (design.md, "Sender policy and quarantine"): read,
// replace and remove one (routes, MCP tools), and judge a delivery against its address's policy,
// which is the SenderScreen the domain service asks before it stores an email or capture event.

import { notFound } from '../domain/errors.js';
import type { AddressRecord } from '../domain/model.js';
import type { SenderFacts, SenderScreen } from '../domain/sender-screen.js';
import { judge, normalizePolicy, type SenderPolicy, type SenderPolicyInput } from './sender-policy-rules.js';
import type { SenderPolicyStore } from './sender-policy-store.js';

export interface SenderPolicyView {
  policy: SenderPolicy | null;
  updatedAt: number | null;
}

export class SenderPolicies implements SenderScreen {
  constructor(
    private readonly store: SenderPolicyStore,
    private readonly now: () => number = Date.now,
  ) {}

  async get(address: AddressRecord): Promise<SenderPolicyView> {
    const stored = await this.store.getSenderPolicy(address.id);
    return stored === null ? { policy: null, updatedAt: null } : { policy: JSON.parse(stored.policy) as SenderPolicy, updatedAt: stored.updatedAt };
  }

  /** Replaces the address's policy as a whole; 400 naming the field for a bad one, 404 when the address went away. */
  async set(address: AddressRecord, input: SenderPolicyInput): Promise<SenderPolicyView> {
    const policy = normalizePolicy(input);
    const now = this.now();
    if (!(await this.store.setSenderPolicy(address.id, JSON.stringify(policy), now))) throw notFound('Address');
    return { policy, updatedAt: now };
  }

  /** Removes the policy (idempotent): deliveries are no longer judged. */
  async remove(address: AddressRecord): Promise<void> {
    if (!(await this.store.setSenderPolicy(address.id, null, this.now()))) throw notFound('Address');
  }

  /** SenderScreen: the rule the sender fails, or null (no policy, or it passes). */
  async check(addressId: string, sender: SenderFacts): Promise<string | null> {
    const stored = await this.store.getSenderPolicy(addressId);
    return stored === null ? null : judge(JSON.parse(stored.policy) as SenderPolicy, sender);
  }
}
