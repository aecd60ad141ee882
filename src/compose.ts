// The composition: the one place that opens the store and builds the hub and every service over it,
// once, and the HTTP app on them. server.ts adds the listeners (HTTP, SMTP, metrics) and starts the
// sweeper; the tests' inject harness (test/inject.ts) answers through the app without them. Each
// feature room gets the opened store as its own port (design.md, "Rooms"), so no room beside the
// domain builds another room's service, and no service is built twice.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { BlockList } from './abuse/block-list.js';
import { ClientDeliveryLimit } from './abuse/client-delivery-limit.js';
import { buildApp, type ComposedDeps } from './app.js';
import { ApprovalService } from './approvals/approval-service.js';
import { Capture } from './capture/capture.js';
import { InflightCaptureBudget } from './capture/inflight-budget.js';
import { ClaimService } from './claims/claim-service.js';
import type { Config } from './config.js';
import { Consumers } from './consumers/consumers.js';
import { tokenIdentity } from './domain/credentials.js';
import { ExpirySweeper } from './domain/expiry-sweeper.js';
import { ReturnAddressService } from './domain/return-address-service.js';
import { SigningSecrets } from './domain/signing-secrets.js';
import type { AppDeps } from './http/route-deps.js';
import { mcpWebhookControl } from './mcp/webhook-control.js';
import { countingStoreErrors, ServiceMetrics } from './metrics/service-metrics.js';
import { composePush, observePush, type Push } from './push/push.js';
import type { Resolve } from './push/target-guard.js';
import { SenderPolicies } from './sender-policy/sender-policies.js';
import { type OpenedStore, openStore } from './storage/open-store.js';
import { InProcessWakeupHub } from './wakeup/wakeup-hub.js';

export interface Composition extends ComposedDeps {
  store: OpenedStore;
  hub: InProcessWakeupHub;
  /** The Fastify app over the services; it does not listen. */
  app: FastifyInstance;
  /** Addresses' expiry, acknowledged events' retention and approvals' expiry, on one timer: not started. */
  sweeper: ExpirySweeper;
  /** Webhook subscriptions (src/push/): their routes are in the app; the worker is not started. */
  push: Push;
}

export interface ComposeOptions {
  /** DNS for webhook targets' address check (tests make a name resolve to a private address). */
  pushResolve?: Resolve | undefined;
}

/**
 * Opens the store `config` names and builds everything over it. The store's changes from other
 * instances wake this process's waiters before it returns. Metrics are counted when METRICS_PORT is
 * set. On a failure nothing is left open.
 */
export async function compose(config: Config, log: FastifyBaseLogger, opts: ComposeOptions = {}): Promise<Composition> {
  const openedStore = await openStore(config, log.child({ component: 'store' }));
  const hub = new InProcessWakeupHub();
  const metrics = config.metricsPort === undefined ? undefined : new ServiceMetrics(openedStore, hub);
  // Every room's store calls are counted when metrics are on: they all go through this one wrapper.
  const store = metrics ? countingStoreErrors(openedStore, metrics) : openedStore;
  const service = new ReturnAddressService(store, hub, config);
  if (metrics) service.observer = metrics;
  const signingSecrets = new SigningSecrets(store);
  const senderPolicies = new SenderPolicies(store.senderPolicies);
  service.screen = senderPolicies;
  const approvals = new ApprovalService(store, service, {
    baseUrl: config.baseUrl,
    minApprovalSeconds: config.minApprovalSeconds,
    maxEventsPerAddress: config.maxEventsPerAddress,
    maxBytesPerAddress: config.maxBytesPerAddress,
    maxPendingApprovals: config.maxPendingApprovals,
  });
  const deps: AppDeps = {
    config,
    store,
    service,
    capture: new Capture(service, signingSecrets, { baseUrl: config.baseUrl, maxEventBytes: config.maxEventBytes }),
    captureBudget: new InflightCaptureBudget(config.maxInflightCaptureBytes),
    signingSecrets,
    senderPolicies,
    claims: new ClaimService(store, hub),
    consumers: new Consumers(store.consumers),
    approvals,
    // One of each for HTTP and SMTP: the block list is parsed once, the per-client window is the store's.
    blockList: config.blockCidrs.length > 0 ? new BlockList(config.blockCidrs) : undefined,
    deliveryLimit:
      config.deliveryRateLimitPerIp === undefined
        ? undefined
        : new ClientDeliveryLimit(store, {
            limit: config.deliveryRateLimitPerIp,
            windowSeconds: config.deliveryRatePerIpWindowSeconds,
            ipv6PrefixBits: config.ipv6PrefixBits,
          }),
    epochs: store.epochs,
    credentials: store.credentials,
    // This instance's waits end here; other instances hear the store's notification (below).
    readTokenRotated: (addressId, oldHash) => hub.tokenRevoked(addressId, tokenIdentity(oldHash)),
    metrics,
  };
  // Webhook subscriptions (src/push/): the worker starts once HTTP listens (server.ts), stops before the hub.
  // MCP subscriptions also get the Events extension's gap and terminated bodies (mcp/webhook-control.ts).
  const control = mcpWebhookControl(service, () => store.epochs.epoch());
  const push = composePush({
    config,
    store,
    consumers: deps.consumers,
    service,
    hub,
    log: log.child({ component: 'push' }),
    resolve: opts.pushResolve,
    control,
  });
  if (metrics) observePush(push, metrics.registry, store.subscriptions);
  const sweeper = new ExpirySweeper(service, config.sweepIntervalSeconds * 1000, log, [{ name: 'approvals', run: () => approvals.sweepDue() }]);
  let app: FastifyInstance | undefined;
  try {
    // An operator's `admin delete` on the SQLite file while this runs: caches drop it, waiters re-read.
    store.watchExternalChanges?.(() => hub.notifyAll());
    app = await buildApp({ ...deps, subscriptions: push.subscriptions }, { loggerInstance: log });
    if (store.capabilities.crossInstanceWakeups && store.subscribe) {
      await store.subscribe(
        (addressId) => hub.notify(addressId),
        () => {
          hub.notifyAll();
          // A rotation heard by nobody while the connection was down: the rows say which tokens went.
          void hub.recheckTokens((id) => store.getAddress(id)).catch((err: unknown) => log.warn({ err }, 'could not re-check the read tokens of open waits'));
        },
        (addressId, identity) => hub.tokenRevoked(addressId, identity),
      );
    }
    return { ...deps, subscriptions: push.subscriptions, store, hub, app, sweeper, push };
  } catch (err) {
    // A failed start must not leave pools or files open.
    await app?.close().catch(() => {});
    await store.close().catch(() => {});
    throw err;
  }
}
