import type { BlockList } from '../abuse/block-list.js';
import type { ClientDeliveryLimit } from '../abuse/client-delivery-limit.js';
import type { ApprovalService } from '../approvals/approval-service.js';
import type { Capture } from '../capture/capture.js';
import type { InflightCaptureBudget } from '../capture/inflight-budget.js';
import type { ClaimService } from '../claims/claim-service.js';
import type { Config } from '../config.js';
import type { Consumers } from '../consumers/consumers.js';
import type { Store } from '../domain/ports.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';
import type { SigningSecrets } from '../domain/signing-secrets.js';
import type { EpochStore } from '../epoch/epoch-store.js';
import type { ServiceMetrics } from '../metrics/service-metrics.js';
import type { ReadTokenRotated } from '../rotation/credential-rotation.js';
import type { CredentialStore } from '../rotation/rotation-store.js';
import type { SenderPolicies } from '../sender-policy/sender-policies.js';

/** What the HTTP layer is built from: the services src/compose.ts builds once, shared by every route plugin and MCP. */
export interface AppDeps {
  config: Config;
  store: Store;
  service: ReturnAddressService;
  /** The capture URL's rules over `service` and `signingSecrets`. */
  capture: Capture;
  /** Capture bytes being received by all requests at once (MAX_INFLIGHT_CAPTURE_BYTES): one per service, every capture route shares it. */
  captureBudget: InflightCaptureBudget;
  /** The sealed per-address signing secrets over `store`: the capture checks signatures with them, their route replaces them. */
  signingSecrets: SigningSecrets;
  /** The addresses' sender policies (src/sender-policy/): their routes, and the screen the service asks. */
  senderPolicies: SenderPolicies;
  /** Claims for several workers on one address (src/claims/): their routes and MCP tools. */
  claims: ClaimService;
  /** Named consumers' positions (src/consumers/): reads with consumer=NAME, their routes and MCP. */
  consumers: Consumers;
  /** Approvals (src/approvals/): their routes, MCP tools and the sweeper. */
  approvals: ApprovalService;
  /** BLOCK_CIDRS, when set: HTTP creates and deliveries, and SMTP, refuse its clients. */
  blockList?: BlockList | undefined;
  /** DELIVERY_RATE_LIMIT_PER_IP, when set: deliveries per client, over HTTP and SMTP alike. */
  deliveryLimit?: ClientDeliveryLimit | undefined;
  /** The store's epoch and last sequences (src/epoch/): events pages, claims and streams carry them. */
  epochs: EpochStore;
  /** Credential rotation (src/rotation/): POST …/rotate. */
  credentials: CredentialStore;
  /** After a rotation replaced a read token: the waits opened with it end (the hub's tokenRevoked). */
  readTokenRotated?: ReadTokenRotated | undefined;
  /** Set when METRICS_PORT is: the HTTP layer counts refusals the service never sees (413 on the body limit). */
  metrics?: ServiceMetrics | undefined;
}
