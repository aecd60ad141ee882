// What MCP results that carry events add to the HTTP API's JSON (design.md, "Trust: what an agent
// may believe"): the Event (with its trust) in the tools' output schema, and one sentence beside
// the JSON saying that event content is data.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { UNTRUSTED_CONTENT } from '../domain/trust.js';
import { epochHeaderValues } from '../epoch/epoch-headers.js';
import type { EpochStore } from '../epoch/epoch-store.js';
import { Address, Event } from '../http/schemas.js';

/** Tools whose results carry events: each result says, beside its JSON, that their content is data. */
export const EVENT_TOOLS: ReadonlySet<string> = new Set(['list_events', 'wait_for_event', 'ack_event', 'claim_events', 'settle_claim']);

/**
 * A route schema of the HTTP API (TypeBox, http/schemas.ts) as the zod schema the SDK's
 * registerTool takes for an outputSchema: one source for both ways out, so a field added to the
 * Event reaches the tools' schema too. Formats and patterns are dropped (string values of `format`
 * and `pattern`): the SDK validates our own output with it, and a deployment's values (an email
 * domain without a dot, say) must never turn a tool's answer into an error.
 */
export function outputSchemaOf(schema: object): z.ZodType {
  const loose = JSON.parse(JSON.stringify(schema), (key, value) => ((key === 'format' || key === 'pattern') && typeof value === 'string' ? undefined : value));
  return z.fromJSONSchema(loose);
}

/** The Event and the Address as the tools' output schemas describe them. */
export const EventOutput = outputSchemaOf(Event);
export const AddressOutput = outputSchemaOf(Address);

/**
 * A result whose first text is exactly the JSON the HTTP API would send; a result carrying events
 * has a second text, UNTRUSTED_CONTENT, where an agent reads it with the events.
 */
export function jsonResult(text: string, carriesEvents: boolean): CallToolResult {
  const content: CallToolResult['content'] = [{ type: 'text', text }];
  if (carriesEvents) content.push({ type: 'text', text: UNTRUSTED_CONTENT });
  return { content, structuredContent: JSON.parse(text) as Record<string, unknown> };
}

/**
 * The `_meta` keys (MCP's reverse-DNS prefix rule) that carry the store's epoch and the address's
 * last sequence on every result that hands out events or cursors (design.md, "Store epoch"): the
 * headers of GET …/events, for readers that see no headers.
 */
export const EPOCH_META = 'io.return-address/epoch';
export const LAST_SEQUENCE_META = 'io.return-address/last-sequence';

/** The `_meta` entries for one address, or none when the address is gone (the result says so itself). */
export async function epochMeta(epochs: EpochStore, addressId: string): Promise<Record<string, string | number>> {
  const v = await epochHeaderValues(epochs, addressId);
  return v ? { [EPOCH_META]: v.epoch, [LAST_SEQUENCE_META]: v.lastSequence } : {};
}

/** The `_meta` entries as JSON members (without braces), for results written as text. */
export const epochMetaMembers = (meta: Record<string, string | number>): string =>
  Object.entries(meta)
    .map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`)
    .join(',');
