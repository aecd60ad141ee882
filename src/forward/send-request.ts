// One attempt to deliver a replay to a local handler, over node:http(s) rather than fetch: fetch
// refuses a body on GET and DELETE and rewrites headers it considers its own, and a replay must send
// what the capture received. The answer's body is read and dropped (a handler's 2xx is all that counts).
import http from 'node:http';
import https from 'node:https';
import type { ReplayRequest } from './replay-request.js';

/** An attempt that got no HTTP answer (refused, reset, timed out). */
export class SendError extends Error {
  override readonly name = 'SendError';
}

/** Methods whose requests carry a Content-Length even when empty; a bodiless GET is sent without one, as it came. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

export function sendReplay(req: ReplayRequest, timeoutMs: number, signal: AbortSignal): Promise<number> {
  const url = new URL(req.origin);
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const out = client.request(
      {
        protocol: url.protocol,
        hostname: url.hostname,
        port: url.port,
        method: req.method,
        path: req.path,
        headers: req.body.length > 0 || BODY_METHODS.has(req.method) ? { ...req.headers, 'content-length': String(req.body.length) } : req.headers,
        signal,
        timeout: timeoutMs,
        agent: false,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', (err) => reject(new SendError(err.message)));
      },
    );
    out.on('timeout', () => out.destroy(new SendError(`no answer within ${timeoutMs / 1000} s`)));
    out.on('error', (err) => reject(err instanceof SendError || signal.aborted ? err : new SendError((err as NodeJS.ErrnoException).code ?? err.message)));
    out.end(req.body);
  });
}
