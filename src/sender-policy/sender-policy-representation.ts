// The JSON a sender policy is shown as, by its routes (http/routes/sender-policy.ts) and its MCP tools.
import type { SenderPolicyView } from './sender-policies.js';

export const senderPolicyView = (v: SenderPolicyView) => ({
  sender_policy: v.policy,
  updated_at: v.updatedAt === null ? null : new Date(v.updatedAt).toISOString(),
});
