// A webhook's body (design.md, "Push subscriptions"): the Event JSON exactly as GET …/events sends
// one. An Event whose JSON exceeds 256 KiB (the MCP Events payload bound) carries, instead of its
// data, {"omitted": true, "size": n, "raw": {"url": …}}: that URL answers the whole event with the
// address's read token, as the MCP events do.
import type { EventRecord } from '../domain/model.js';
import { eventJson } from '../domain/representation.js';

export const MAX_WEBHOOK_BYTES = 256 * 1024;

export function eventEnvelope(e: EventRecord, baseUrl: string): string {
  const json = eventJson(e);
  if (Buffer.byteLength(json) <= MAX_WEBHOOK_BYTES) return json;
  const url = `${baseUrl}/api/v1/addresses/${e.addressId}/events?after=${e.sequence - 1}&limit=1`;
  return eventJson({ ...e, data: JSON.stringify({ omitted: true, size: Buffer.byteLength(e.data), raw: { url } }) });
}
