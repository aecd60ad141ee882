// GitHub's "application/x-www-form-urlencoded" content type sends the JSON delivery as one form field,
// `payload=<json text>`. Stored as a form it would be {"payload": "<text>"} and no `data.body.action=…`
// match could see it, so a GitHub form delivery's body is the payload's own JSON text (its numbers
// keep every digit). `raw` keeps the bytes as sent, and the signature is checked over those bytes,
// exactly as GitHub signs them.
import { MAX_VALUE_DEPTH, nestsDeeperThan } from '../domain/json-depth.js';
import { mediaType, type ReadBody } from './request-body.js';

/** A request sent by GitHub with its form content type (`payload=<json>`). */
export function isGithubFormDelivery(headers: Record<string, string>): boolean {
  if (headers['x-github-event'] === undefined && headers['x-github-delivery'] === undefined) return false;
  return mediaType(headers['content-type']) === 'application/x-www-form-urlencoded';
}

/** `body` with GitHub's form-wrapped JSON payload unwrapped; `body` itself when it is anything else. */
export function unwrapGithubFormPayload(headers: Record<string, string>, body: ReadBody): ReadBody {
  if (!isGithubFormDelivery(headers)) return body;
  const form = body.value as Record<string, unknown> | undefined;
  if (form === undefined || form === null || typeof form !== 'object') return body;
  const keys = Object.keys(form);
  // Only GitHub's own shape: exactly one field, named payload, holding one JSON text.
  if (keys.length !== 1 || keys[0] !== 'payload' || typeof form.payload !== 'string') return body;
  const json = form.payload;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return body;
  }
  // data.body sits one level inside data, whose nesting is bounded like the inbox's.
  if (nestsDeeperThan(json, MAX_VALUE_DEPTH - 1)) return body;
  return { json, value, attachments: body.attachments, text: body.text };
}
