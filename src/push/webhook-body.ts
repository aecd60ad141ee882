// A webhook's body (design.md, "Push subscriptions"): the Event JSON exactly as GET …/events sends
// one. An Event whose JSON exceeds 256 KiB (the MCP Events payload bound) carries, instead of its
// data, {"omitted": true, "size": n, "raw": {"url": …}}: that URL answers the whole event with the
// address's read token, as the MCP events do.
// A subscription made by MCP events/subscribe (its id starts with MCP_SUBSCRIPTION_PREFIX) gets the
// Events extension's occurrence instead, {eventId, name, timestamp, data: Event, cursor}, under the
// same bound, and the X-MCP-Subscription-Id header on every POST.
import type { EventRecord } from '../domain/model.js';
import { eventJson } from '../domain/representation.js';

export const MAX_WEBHOOK_BYTES = 256 * 1024;

/**
 * The id prefix of subscriptions made over MCP: `mcp.<kind>.<hash>`, where return_address.<kind> is
 * the event type subscribed to. The id alone says how to deliver, so no column is needed.
 */
export const MCP_SUBSCRIPTION_PREFIX = 'mcp.';
export const MCP_SUBSCRIPTION_HEADER = 'X-MCP-Subscription-Id';

/** The MCP event type name a subscription delivers, or undefined for one made by the REST API. */
export function mcpEventName(subscriptionId: string): string | undefined {
  if (!subscriptionId.startsWith(MCP_SUBSCRIPTION_PREFIX)) return undefined;
  const kind = subscriptionId.slice(MCP_SUBSCRIPTION_PREFIX.length).split('.')[0];
  return kind ? `return_address.${kind}` : undefined;
}

function omitted(e: EventRecord, baseUrl: string, query = ''): EventRecord {
  const url = `${baseUrl}/api/v1/addresses/${e.addressId}/events?after=${e.sequence - 1}&limit=1${query}`;
  return { ...e, data: JSON.stringify({ omitted: true, size: Buffer.byteLength(e.data), raw: { url } }) };
}

export function eventEnvelope(e: EventRecord, baseUrl: string): string {
  const json = eventJson(e);
  if (Buffer.byteLength(json) <= MAX_WEBHOOK_BYTES) return json;
  return eventJson(omitted(e, baseUrl));
}

/** One MCP occurrence as the webhook body; the Event spliced in as stored (its numbers keep every digit). */
export function occurrenceEnvelope(e: EventRecord, name: string, baseUrl: string): string {
  const occurrence = (json: string) =>
    `{"eventId":"${e.id}","name":"${name}","timestamp":"${new Date(e.createdAt).toISOString()}","data":${json},"cursor":"${e.sequence}"}`;
  const full = occurrence(eventJson(e));
  if (Buffer.byteLength(full) <= MAX_WEBHOOK_BYTES) return full;
  return occurrence(eventJson(omitted(e, baseUrl, '&state=all')));
}

/** The body and extra headers of one POST for this subscription. */
export function webhookRequest(subscriptionId: string, e: EventRecord, baseUrl: string): { body: string; headers?: Record<string, string> } {
  const name = mcpEventName(subscriptionId);
  if (name === undefined) return { body: eventEnvelope(e, baseUrl) };
  return { body: occurrenceEnvelope(e, name, baseUrl), headers: { [MCP_SUBSCRIPTION_HEADER]: subscriptionId } };
}

/**
 * What a failed attempt means for the subscription. A REST subscription retries every failure. An
 * MCP one follows the Events draft: a 413 is not retried (the event is given up and the position
 * moves past it, "servers MUST treat 413 as a non-retryable failure for that event"); a 410 Gone
 * is not retried either, the subscription pauses at once with its event kept, until a refresh
 * (events/subscribe again) reactivates it.
 */
export function failureVerdict(subscriptionId: string, status: number | null): 'retry' | 'skip' | 'pause' {
  if (mcpEventName(subscriptionId) === undefined) return 'retry';
  if (status === 413) return 'skip';
  if (status === 410) return 'pause';
  return 'retry';
}
