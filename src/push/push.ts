// The push room's composition (design.md, "Push subscriptions"): its rules over the store's
// subscriptions, the sealing key, and the worker. The process composition makes one with
// composePush, hands `subscriptions` to the routes, starts the worker once HTTP listens and stops
// it before the wakeup hub shuts down.

import type { Registry } from 'prom-client';
import type { Config } from '../config.js';
import type { Consumers } from '../consumers/consumers.js';
import type { Log, WakeupHub } from '../domain/ports.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';
import type { DeliveryControl } from './delivery-control.js';
import { PushMetrics } from './push-metrics.js';
import type { PushObserver } from './push-runner.js';
import { PushWorker } from './push-worker.js';
import { loadSealKey, SecretSeal } from './subscription-secret.js';
import type { PushStore, SubscriptionStore } from './subscription-store.js';
import { Subscriptions } from './subscriptions.js';
import { type Resolve, systemResolve } from './target-guard.js';

export interface Push {
  subscriptions: Subscriptions;
  worker: PushWorker;
}

export interface PushDeps {
  config: Config;
  store: PushStore;
  /** The service's one Consumers: a subscription's position is a named consumer. */
  consumers: Consumers;
  service: ReturnAddressService;
  hub: WakeupHub;
  log: Log;
  observer?: PushObserver;
  /** DNS for the target check (tests resolve names their own way); node:dns by default. */
  resolve?: Resolve;
  /** Control bodies for the subscriptions it covers (MCP's gap and terminated: mcp/webhook-control.ts). */
  control?: DeliveryControl;
}

/** The push series on the service's registry, when METRICS_PORT is set. */
export function observePush(push: Push, registry: Registry, store: SubscriptionStore): void {
  push.worker.observer = new PushMetrics(
    registry,
    store,
    () => push.worker.active,
    () => push.worker.lagEvents(),
  );
}

export function composePush(d: PushDeps): Push {
  const seal = new SecretSeal(loadSealKey(d.config.push.sealSecret, d.config.dataDir));
  const subscriptions = new Subscriptions(d.store, d.consumers, d.store.subscriptions, d.config.push, seal, d.resolve ?? systemResolve);
  const worker = new PushWorker({
    service: d.service,
    store: d.store,
    subscriptions,
    hub: d.hub,
    config: d.config.push,
    baseUrl: d.config.baseUrl,
    log: d.log,
    ...(d.observer ? { observer: d.observer } : {}),
    control: d.control,
  });
  return { subscriptions, worker };
}
