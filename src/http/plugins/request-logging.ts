// What the request log may contain: never the Authorization header, never the secret path segment
// of an inbox, capture or approval page URL (design.md, "Identifiers and secrets").
import type { LoggerOptions } from 'pino';

/**
 * The segment after the address id of a write-only URL, wherever the router would find one: the
 * path is matched decoded, case-insensitively and with repeated slashes folded, because
 * `/api/v1/%69nbox/…`, `//api/v1/inbox/…` and `/API/V1/INBOX/…` reach a route (or a 404) with the
 * secret in them all the same.
 */
const SECRET_SEGMENT = /^(\/(?:api\/v1\/(?:inbox|hooks)|approve)\/[^/?#]*\/)[^/?#]+/i;
/** The capture URL, whose query strings carry other services' credentials (OAuth codes, Meta verify tokens). */
const CAPTURE_PATH = /^\/api\/v1\/hooks\//i;
/** Anything shaped like one of our credentials, anywhere in the URL (a query string, a typo'd path). */
const CREDENTIAL = /aa_(?:ingress|read|approve)_[^/?#&;=\s]*/gi;

/** Percent-decodes what can be decoded; a malformed escape is left as it is. */
function decodeLeniently(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s.replace(/(?:%[0-9a-f]{2})+/gi, (run) => {
      try {
        return decodeURIComponent(run);
      } catch {
        return run;
      }
    });
  }
}

/**
 * The URL as it may be logged: decoded, slashes folded, the secret segment, a capture URL's whole
 * query and every credential replaced by [REDACTED]. Decoded twice, so a doubly-encoded credential is found too.
 */
export function redactUrl(target: string): string {
  // An absolute-form target (`GET http://host/api/v1/hooks/…?code=…`, what a forward proxy sends) is
  // matched on its path like any other: its origin is kept aside, so the rules below still apply.
  const origin = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(target)?.[0] ?? '';
  return origin.replace(CREDENTIAL, '[REDACTED]') + redactOriginForm(target.slice(origin.length));
}

function redactOriginForm(url: string): string {
  const q = url.search(/[?#]/);
  const path = decodeLeniently(decodeLeniently(q === -1 ? url : url.slice(0, q))).replace(/\/{2,}/g, '/');
  const query = q === -1 ? '' : url.slice(q);
  const rest = query === '' ? '' : CAPTURE_PATH.test(path) ? '?[REDACTED]' : decodeLeniently(decodeLeniently(query));
  return (path.replace(SECRET_SEGMENT, '$1[REDACTED]') + rest).replace(CREDENTIAL, '[REDACTED]');
}

interface LoggedRequest {
  method: string;
  url: string;
  hostname?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    redact: { paths: ['req.headers.authorization', 'headers.authorization', 'authorization'], censor: '[REDACTED]' },
    serializers: {
      req: (req: LoggedRequest) => ({
        method: req.method,
        url: redactUrl(req.url),
        host: req.hostname,
        remoteAddress: req.ip,
        remotePort: req.socket?.remotePort,
      }),
    },
  };
}
