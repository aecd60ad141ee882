import type { Config } from '../config.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';
import type { Store } from '../domain/ports.js';

/** What the HTTP layer is built from. */
export interface AppDeps {
  config: Config;
  store: Store;
  service: ReturnAddressService;
}
