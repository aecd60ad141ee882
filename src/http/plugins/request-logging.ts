// What the request log may contain: never the Authorization header, never the secret path segment
// of an inbox URL (../shared/spec/decisions.md §1).
import type { LoggerOptions } from 'pino';

const INBOX_SECRET_IN_PATH = /(\/api\/v1\/inbox\/[^/?#]*\/)[^/?#]+/;

export function redactUrl(url: string): string {
  return url.replace(INBOX_SECRET_IN_PATH, '$1[REDACTED]');
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
