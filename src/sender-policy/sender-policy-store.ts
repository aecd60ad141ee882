// What a sender policy needs from a store (design.md, "Sender policy and quarantine"): one policy per
// address, as the JSON text sender-policy-rules.ts wrote, deleted with its address. Both stores
// implement it (storage/*/…-sender-policies.ts, migration 0013) and expose it as `senderPolicies`.

export interface StoredSenderPolicy {
  /** The policy as JSON text (sender-policy-rules.ts's normal form). */
  policy: string;
  /** Epoch ms of the PUT that stored it. */
  updatedAt: number;
}

export interface SenderPolicyStore {
  /** The address's policy, or null when it has none (or does not exist). */
  getSenderPolicy(addressId: string): Promise<StoredSenderPolicy | null>;
  /** Replaces the policy (null removes it), durably before resolving; false when the address does not exist. */
  setSenderPolicy(addressId: string, policy: string | null, now: number): Promise<boolean>;
}
