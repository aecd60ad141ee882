// The TypeScript client (design.md, "Agent toolkit and live view"), published as
// @return-address/client. Its types are the routes' own TypeBox schemas, expanded to plain types at
// build time (scripts/generate.mjs writes src/generated/), so the package has no dependency, carries
// no server code and cannot drift from what the routes validate and /openapi.json documents.
//
// This file is the package's whole public API, re-exported from the modules that hold it:
// client.ts (ReturnAddress), reading.ts (consume, events, waitFor), claims.ts (consumeClaims),
// approvals.ts (ask), http.ts (requests and retries), pages.ts (a page's epoch), errors.ts,
// types.ts (the route schemas' types and the calls' options) and json-source.ts (the JSON as sent).

export { ReturnAddress } from './client.js';
export { ReturnAddressError } from './errors.js';
export { type EventFilter, type EventMatch, eventMatches, parseMatch, valueAt } from './generated/event-match.js';
export { appendFilter, DEFAULT_URL, MAX_WAIT_SECONDS, resolveUrl } from './http.js';
export { indentJson, sourceOf } from './json-source.js';
export { type PageEpoch, pageEpoch } from './pages.js';
export type {
  Address,
  Approval,
  ApprovalFieldSpec,
  AskOptions,
  AskResult,
  Claim,
  ClaimConsumeOptions,
  ClaimOptions,
  ClientOptions,
  ConsumeOptions,
  CreateAddressBody,
  CreateAddressResponse,
  CreateEventBody,
  CreateOptions,
  ErrorBody,
  Event,
  EventDeliveryResponse,
  EventPage,
  EventsOptions,
  FilterOptions,
  PageOptions,
  RotateCredentialsResponse,
  SenderPolicy,
  SenderPolicyResponse,
  SigningSecretsBody,
  SigningSecretsResponse,
  Subscription,
  SubscriptionRequest,
  WaitOptions,
  WaitResult,
} from './types.js';
