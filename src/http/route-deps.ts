import type { Config } from '../config.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';
import type { Store } from '../domain/ports.js';
import type { ServiceMetrics } from '../metrics/service-metrics.js';

/** What the HTTP layer is built from. */
export interface AppDeps {
  config: Config;
  store: Store;
  service: ReturnAddressService;
  /** Set when METRICS_PORT is: the HTTP layer counts refusals the service never sees (413 on the body limit). */
  metrics?: ServiceMetrics | undefined;
}
