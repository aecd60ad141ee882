// Who sent a captured request, from its headers and body (design.md, "Capture URL"): the event's type and
// source, and the key that makes a provider's retry of one delivery a duplicate instead of a second
// event. Values taken from a request become part of a type or key only when they look like what the
// provider sends, so a hostile body cannot plant control characters or megabytes in them.
import { HTTP_DEDUPE_KEY_RE } from '../domain/dedupe-key.js';
import { ApiError } from '../domain/errors.js';

export interface Recognition {
  type: string;
  source: string;
  /** The idempotency key of this delivery, when the request carries one. */
  dedupeKey?: string;
}

export const UNRECOGNISED_TYPE = 'http.request';
export const UNRECOGNISED_SOURCE = 'https';

/** An event name as providers write them: "pull_request", "invoice.paid", "app_mention". */
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127}$/;
const MAX_KEY = 255;
const KEY_ALLOWED = HTTP_DEDUPE_KEY_RE;

type Json = Record<string, unknown>;
const objectOrEmpty = (v: unknown): Json => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const name = (v: unknown): string | undefined => (typeof v === 'string' && NAME.test(v) ? v : undefined);

/** `prefix` + `id` as a dedupe key, or undefined when `id` is no usable key. */
function providerKey(prefix: string, id: unknown): string | undefined {
  if (typeof id !== 'string' || id.length === 0) return undefined;
  const key = `${prefix}:${id}`;
  return key.length <= MAX_KEY && KEY_ALLOWED.test(key) ? key : undefined;
}

/** Slack's own body fields: an Events API envelope, a url_verification, or an interactive payload. */
function slackType(body: Json): string {
  const event = objectOrEmpty(body.event);
  let payload: Json = {};
  if (typeof body.payload === 'string') {
    try {
      payload = objectOrEmpty(JSON.parse(body.payload));
    } catch {
      // Not Slack's JSON payload: the other fields decide.
    }
  }
  return name(event.type) ?? name(body.type) ?? name(payload.type) ?? (typeof body.command === 'string' ? 'command' : 'request');
}

const isStripeEvent = (body: Json) => body.object === 'event' && typeof body.id === 'string';
const isSlack = (h: Record<string, string>, body: Json) =>
  h['x-slack-signature'] !== undefined ||
  h['x-slack-request-timestamp'] !== undefined ||
  (body.type === 'url_verification' && typeof body.challenge === 'string') ||
  (body.type === 'event_callback' && typeof body.team_id === 'string');

export function recognise(headers: Record<string, string>, parsedBody: unknown): Recognition {
  const body = objectOrEmpty(parsedBody);
  const h = headers;
  let type = UNRECOGNISED_TYPE;
  let source = UNRECOGNISED_SOURCE;
  if (h['x-github-event'] !== undefined || h['x-github-delivery'] !== undefined) {
    source = 'github';
    type = `github.${name(h['x-github-event']) ?? 'event'}`;
  } else if (h['stripe-signature'] !== undefined || isStripeEvent(body)) {
    source = 'stripe';
    type = `stripe.${name(body.type) ?? 'event'}`;
  } else if (isSlack(h, body)) {
    source = 'slack';
    type = `slack.${slackType(body)}`;
  } else if (h['webhook-id'] !== undefined || h['svix-id'] !== undefined) {
    source = 'webhook';
    type = name(body.type) ?? UNRECOGNISED_TYPE;
  }
  return { type, source, dedupeKey: dedupeKey(h, body) };
}

/** The first key in the dedupe order of the capture guide (src/docs/guides/llms-full/070-capture-url.md); provider keys carry the provider's name, e.g. "github:<delivery id>". */
function dedupeKey(h: Record<string, string>, body: Json): string | undefined {
  const idempotencyKey = h['idempotency-key'];
  if (idempotencyKey !== undefined) {
    // The sender asked for this key: one it cannot have must be refused, as on the inbox URL.
    if (idempotencyKey.length === 0 || idempotencyKey.length > MAX_KEY || !KEY_ALLOWED.test(idempotencyKey)) {
      throw new ApiError('invalid_request', "Invalid header 'Idempotency-Key': must be 1-255 characters without control characters.");
    }
    return idempotencyKey;
  }
  return (
    providerKey('webhook', h['webhook-id'] ?? h['svix-id']) ??
    providerKey('github', h['x-github-delivery']) ??
    (isStripeEvent(body) ? providerKey('stripe', body.id) : undefined) ??
    providerKey('shopify', h['x-shopify-webhook-id']) ??
    // Slack retries an Events API delivery (X-Slack-Retry-Num) with the same event_id.
    (isSlack(h, body) && body.type === 'event_callback' ? providerKey('slack', body.event_id) : undefined)
  );
}
