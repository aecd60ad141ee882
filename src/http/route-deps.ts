import type { Config } from '../config.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';
import type { Store } from '../domain/ports.js';
import type { InProcessWakeupHub } from '../wakeup/wakeup-hub.js';

/** What the HTTP layer is built from. */
export interface AppDeps {
  config: Config;
  store: Store;
  hub: InProcessWakeupHub;
  service: ReturnAddressService;
}
