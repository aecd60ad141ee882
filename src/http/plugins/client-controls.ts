// The operator's controls over clients (src/abuse/), as onRequest hooks: BLOCK_CIDRS refuses a
// create or a delivery from a listed IP with 403 blocked before anything else is looked at (a blocked
// client learns nothing about addresses); DELIVERY_RATE_LIMIT_PER_IP refuses a delivery with 429
// rate_limited once its credential has been checked and before its body is read, so an unknown
// address or a wrong secret never spends a client's budget and a refused body is never received.
// Neither hook exists unless its setting is set: a default instance pays nothing.
import type { onRequestHookHandler } from 'fastify';
import { BlockList } from '../../abuse/block-list.js';
import { ClientDeliveryLimit } from '../../abuse/client-delivery-limit.js';
import type { Config } from '../../config.js';
import { ApiError } from '../../domain/errors.js';
import type { Store } from '../../domain/ports.js';

export const BLOCKED_MESSAGE = "Requests from your network are blocked by this service's operator (BLOCK_CIDRS).";

export interface ClientControls {
  /** Hooks to run first on create and delivery routes (empty when BLOCK_CIDRS is unset). */
  blocked: onRequestHookHandler[];
  /** Hooks to run after a delivery's credential check (empty when DELIVERY_RATE_LIMIT_PER_IP is unset). */
  deliveryLimit: onRequestHookHandler[];
}

/** One set per service: every route plugin shares it (the block list is parsed once). */
const built = new WeakMap<Config, ClientControls>();

export function clientControls(config: Config, store: Store): ClientControls {
  let controls = built.get(config);
  if (controls) return controls;
  controls = { blocked: [], deliveryLimit: [] };
  if (config.blockCidrs.length > 0) {
    const list = new BlockList(config.blockCidrs);
    controls.blocked.push((request, _reply, done) => done(list.has(request.ip) ? new ApiError('blocked', BLOCKED_MESSAGE) : undefined));
  }
  const limit = config.deliveryRateLimitPerIp;
  if (limit !== undefined) {
    const counter = new ClientDeliveryLimit(store, { limit, windowSeconds: config.deliveryRatePerIpWindowSeconds, ipv6PrefixBits: config.ipv6PrefixBits });
    controls.deliveryLimit.push((request, _reply, done) => {
      counter.take(request.ip).then((wait) => {
        done(wait === undefined ? undefined : new ApiError('rate_limited', counter.message(wait), { 'retry-after': String(wait) }));
      }, done);
    });
  }
  built.set(config, controls);
  return controls;
}
