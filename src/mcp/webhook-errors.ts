// The error codes of the Events extension's webhook mode, as the working group's draft
// (experimental-ext-triggers-events, docs/design-sketch-proposal.md, "Error Codes") numbers them:
// general-purpose codes in the server range, each with a typed `data`. events/subscribe and
// events/unsubscribe answer with these; events/poll and events/stream still use the earlier
// numbering of events-extension.ts (design.md, "MCP, current revision", says why).

/** An unknown event name (data.kind "event") or no subscription for the key (data.kind "subscription"). */
export const WEBHOOK_NOT_FOUND = -32011;
/** The principal may not subscribe to this event with these arguments. */
export const WEBHOOK_FORBIDDEN = -32012;
/** A server limit was reached: data.limit names it, data.max gives the ceiling. */
export const WEBHOOK_RESOURCE_EXHAUSTED = -32013;
/** Well-formed but not offered here: data {feature, value}, e.g. {feature: "deliveryMode", value: "push"}. */
export const WEBHOOK_UNSUPPORTED = -32014;
/** The callback endpoint failed verification or could not be reached: data.reason is a category. */
export const CALLBACK_ENDPOINT_ERROR = -32015;
