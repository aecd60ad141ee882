// The Events extension's non-event webhook bodies (the working group's draft, "Non-event webhook
// bodies"; design.md, "MCP, current revision"), for subscriptions made by events/subscribe (id
// `mcp.…`) only: the push room's runner sends them through its DeliveryControl hook, signed and
// headed like an occurrence (Standard Webhooks, X-MCP-Subscription-Id), webhook-id
// msg_<type>_<hex>. REST subscriptions get none.
// - gap {"type":"gap","cursor"}: delivery resumes after `cursor`; events before it were skipped
//   (retention pruned them before delivery, a 413 gave one up, the store was restored). Its
//   webhook-id is derived from (subscription, cursor, store epoch), so a retry carries the same one.
// - terminated {"type":"terminated","error"}: the subscription no longer exists because its
//   address was deleted or expired (the principal is gone: -32012, data.reason "address_gone").
import { createHash, randomBytes } from 'node:crypto';
import type { AddressRecord, EventRecord } from '../domain/model.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';
import type { ControlPost, DeliveryControl } from '../push/delivery-control.js';
import { MCP_SUBSCRIPTION_HEADER, MCP_SUBSCRIPTION_PREFIX } from '../push/webhook-body.js';
import { firstKeptAfter } from './events-position.js';
import { WEBHOOK_FORBIDDEN } from './webhook-errors.js';

const TERMINATED_MESSAGE = "The subscription's address was deleted or expired: its read token authorizes nothing now, and the subscription is gone.";

function post(subscriptionId: string, messageId: string, body: unknown): ControlPost {
  return { messageId, body: JSON.stringify(body), headers: { [MCP_SUBSCRIPTION_HEADER]: subscriptionId } };
}

export function gapPost(subscriptionId: string, cursor: number, epoch: string): ControlPost {
  const id = createHash('sha256').update(`${subscriptionId}\n${cursor}\n${epoch}`).digest('hex').slice(0, 32);
  return post(subscriptionId, `msg_gap_${id}`, { type: 'gap', cursor: String(cursor) });
}

export function terminatedPost(subscriptionId: string): ControlPost {
  return post(subscriptionId, `msg_terminated_${randomBytes(12).toString('hex')}`, {
    type: 'terminated',
    error: { code: WEBHOOK_FORBIDDEN, message: TERMINATED_MESSAGE, data: { reason: 'address_gone' } },
  });
}

/** The hook compose.ts gives the push worker: control bodies for MCP subscriptions. */
export function mcpWebhookControl(service: ReturnAddressService, epoch: () => Promise<string>): DeliveryControl {
  return {
    covers: (id) => id.startsWith(MCP_SUBSCRIPTION_PREFIX),
    epoch,
    async prunedUpTo(address: AddressRecord, cursor: number, _shown: EventRecord | undefined): Promise<number | null> {
      const kept = await firstKeptAfter(service, address, cursor);
      return kept !== null && kept.sequence > cursor + 1 ? kept.sequence - 1 : null;
    },
    gap: gapPost,
    terminated: terminatedPost,
  };
}
