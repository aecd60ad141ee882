// One request to the capture URL as the capture rules see it: no framework types, so the rules are
// tested and reused without HTTP (design.md, "Capture URL").
import { utf8HeaderValue } from '../domain/header-text.js';

export interface CapturedRequest {
  method: string;
  /** The part of the path below `/hooks/{id}/{secret}`, as sent ('' when none), e.g. "/github/pr-42". */
  subPath: string;
  /** The query string without "?" ('' when none), as sent. */
  query: string;
  /** Header names lower-case; a header sent several times is joined with ", " (RFC 9110 §5.3). */
  headers: Record<string, string>;
  /** The body's exact bytes; empty when there is none. */
  body: Buffer;
  remoteIp: string;
}

/** Headers from Node's rawHeaders (values decoded as UTF-8 where their bytes are UTF-8) ([name, value, name, value, …]), in the shape CapturedRequest holds. */
export function headersFromRaw(rawHeaders: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = Object.create(null);
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] as string).toLowerCase();
    const value = utf8HeaderValue(rawHeaders[i + 1] as string);
    const prev = headers[name];
    headers[name] = prev === undefined ? value : `${prev}, ${value}`;
  }
  return headers;
}

/** A query string as an object: values are strings, a repeated key an array of them, in order. */
export function queryObject(query: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null);
  for (const [k, v] of new URLSearchParams(query)) {
    const prev = out[k];
    // Appended in place: copying the array on each repeat made one key repeated n times cost n².
    if (prev === undefined) out[k] = v;
    else if (Array.isArray(prev)) prev.push(v);
    else out[k] = [prev, v];
  }
  return out;
}
