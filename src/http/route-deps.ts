import type { Capture } from '../capture/capture.js';
import type { Config } from '../config.js';
import type { Store } from '../domain/ports.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';
import type { SigningSecrets } from '../domain/signing-secrets.js';
import type { ServiceMetrics } from '../metrics/service-metrics.js';
import type { SenderPolicies } from '../sender-policy/sender-policies.js';

/** What the HTTP layer is built from. */
export interface AppDeps {
  config: Config;
  store: Store;
  service: ReturnAddressService;
  /** The capture URL's rules over `service` and `signingSecrets`: built once where the service is composed, not per route plugin. */
  capture: Capture;
  /** The sealed per-address signing secrets over `store`: the capture checks signatures with them, their route replaces them. */
  signingSecrets: SigningSecrets;
  /** The addresses' sender policies (src/sender-policy/): their routes, and the screen the service asks. */
  senderPolicies: SenderPolicies;
  /** Set when METRICS_PORT is: the HTTP layer counts refusals the service never sees (413 on the body limit). */
  metrics?: ServiceMetrics | undefined;
}
