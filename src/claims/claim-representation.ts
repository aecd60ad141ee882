// The JSON a claim is shown as (design.md, "Claims"), by its routes (http/routes/claims.ts) and its MCP
// tools alike: events rendered from their stored JSON, as pages are.
import { eventJson } from '../domain/representation.js';
import type { ClaimBatch } from './claim-rules.js';

const iso = (ms: number) => new Date(ms).toISOString();

/** ClaimResponse (http/routes/claim-schemas.ts) as JSON text. */
export function claimResponseJson(batch: ClaimBatch): string {
  return `{"claims":[${batch.claims
    .map(
      (c) =>
        `{"event":${eventJson(c.event)},"lease_id":"${c.leaseId}","lease_expires_at":"${iso(c.leaseExpiresAt)}","delivery_count":${c.event.deliveryCount ?? 1}}`,
    )
    .join(',')}]}`;
}
