// The operator's controls over clients (src/abuse/), as onRequest hooks: BLOCK_CIDRS refuses a
// create or a delivery from a listed IP with 403 blocked before anything else is looked at (a blocked
// client learns nothing about addresses); DELIVERY_RATE_LIMIT_PER_IP refuses a delivery with 429
// rate_limited once its credential has been checked and before its body is read, so an unknown
// address or a wrong secret never spends a client's budget and a refused body is never received.
// Neither hook exists unless its setting is set: a default instance pays nothing.
import type { onRequestHookHandler } from 'fastify';
import { ApiError } from '../../domain/errors.js';
import type { AppDeps } from '../route-deps.js';

export const BLOCKED_MESSAGE = "Requests from your network are blocked by this service's operator (BLOCK_CIDRS).";

export interface ClientControls {
  /** Hooks to run first on create and delivery routes (empty when BLOCK_CIDRS is unset). */
  blocked: onRequestHookHandler[];
  /** Hooks to run after a delivery's credential check (empty when DELIVERY_RATE_LIMIT_PER_IP is unset). */
  deliveryLimit: onRequestHookHandler[];
}

/** The hooks over the service's one block list and delivery limit (built by src/compose.ts, shared with SMTP). */
export function clientControls({ blockList: list, deliveryLimit: counter }: Pick<AppDeps, 'blockList' | 'deliveryLimit'>): ClientControls {
  const controls: ClientControls = { blocked: [], deliveryLimit: [] };
  if (list !== undefined) {
    controls.blocked.push((request, _reply, done) => done(list.has(request.ip) ? new ApiError('blocked', BLOCKED_MESSAGE) : undefined));
  }
  if (counter !== undefined) {
    controls.deliveryLimit.push((request, _reply, done) => {
      counter.take(request.ip).then((wait) => {
        done(wait === undefined ? undefined : new ApiError('rate_limited', counter.message(wait), { 'retry-after': String(wait) }));
      }, done);
    });
  }
  return controls;
}
