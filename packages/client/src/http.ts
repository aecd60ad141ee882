// The HTTP layer: one request (JSON in and out, errors as ReturnAddressError) and the retry loop
// every read runs in, with the defaults they share.

import { ReturnAddressError } from './errors.js';
import { rememberSource } from './json-source.js';
import type { ErrorBody, FilterOptions } from './types.js';

export const DEFAULT_URL = 'http://localhost:3000';
/**
 * The server holds a long-poll at most this long (EventsQuery.wait maximum, MAX_WAIT_SECONDS of the
 * service's domain/long-poll.ts; this package imports nothing from the service, and
 * test/client/client-package.test.ts checks that the two agree).
 */
export const MAX_WAIT_SECONDS = 25;

/** Adds a filter's parameters (repeated type and match) to a query. */
export function appendFilter(params: URLSearchParams, f: FilterOptions): void {
  for (const t of typeof f.type === 'string' ? [f.type] : (f.type ?? [])) params.append('type', t);
  for (const [path, value] of Object.entries(f.match ?? {})) params.append('match', `${path}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
  if (f.state !== undefined) params.set('state', f.state);
}

/** An environment variable where there is a `process` (Node, Deno), else undefined (browsers). */
export function envVar(name: string): string | undefined {
  return (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[name];
}

export function resolveUrl(url?: string): string {
  return (url ?? envVar('RETURN_ADDRESS_URL') ?? DEFAULT_URL).replace(/\/+$/, '');
}

export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** Retried by reads: no answer at all, or one that says "try again" (429, 5xx). */
function transient(err: unknown): boolean {
  return err instanceof ReturnAddressError && (err.status === 0 || err.status === 429 || err.status >= 500);
}

/**
 * A 5xx that does not say "try later" (500 internal, not 502/503/504): the same request will most
 * likely fail again, so it is retried only this many times in all, not until the deadline (a page
 * that failed on the server every time was once retried forever).
 */
const INTERNAL_ERROR_ATTEMPTS = 3;
const tryLater = (err: unknown) =>
  err instanceof ReturnAddressError && (err.status === 0 || err.status === 429 || err.status === 502 || err.status === 503 || err.status === 504);

export async function request<T>(
  doFetch: typeof fetch,
  method: string,
  url: string,
  opts: { token?: string; json?: unknown; headers?: Record<string, string>; signal?: AbortSignal; onHeaders?: (headers: Headers) => void } = {},
): Promise<T> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.json !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  let text: string;
  try {
    res = await doFetch(url, { method, headers, body: opts.json === undefined ? undefined : JSON.stringify(opts.json), signal: opts.signal });
    text = await res.text();
  } catch (err) {
    if (opts.signal?.aborted && (opts.signal.reason as Error)?.name !== 'TimeoutError') throw err;
    throw new ReturnAddressError(
      0,
      'network_error',
      `${method} ${url}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`,
      { cause: err },
    );
  }
  let body: unknown = null;
  if (text !== '') {
    try {
      body = JSON.parse(text);
    } catch {
      throw new ReturnAddressError(res.status, 'bad_response', `${method} ${url}: HTTP ${res.status}, not JSON: ${text.slice(0, 200)}`);
    }
    rememberSource(body, text);
  }
  if (!res.ok) {
    const e = (body as Partial<ErrorBody> | null)?.error;
    throw new ReturnAddressError(res.status, e?.code ?? 'bad_response', e?.message ?? `${method} ${url}: HTTP ${res.status}`);
  }
  opts.onHeaders?.(res.headers);
  return body as T;
}

/**
 * Runs a read, retrying transient failures with capped exponential backoff (and jitter) until
 * `deadline`; a 500 only INTERNAL_ERROR_ATTEMPTS times in all. `credentials` is the client: its read
 * token as it is now, and the rotate() under way (either may change while a read waits). `read` is told whether the attempt before
 * it failed: a long-poll then asks without waiting first (reading.ts), so that a service back from a
 * restore says its new epoch at once.
 */
export async function retrying<T>(
  read: (failed: boolean) => Promise<T>,
  deadline: number,
  signal: AbortSignal | undefined,
  credentials: { readonly token: string; readonly rotation?: Promise<unknown> | undefined },
): Promise<T> {
  let internalErrors = 0;
  let used = credentials.token;
  let failed = false;
  for (let attempt = 0; ; attempt++) {
    try {
      return await read(failed);
    } catch (err) {
      // This client rotated its own read token (rotate()) while the read waited: the service ended
      // that wait for the old token (credentials_rotated), so it is read again with the new one.
      if (err instanceof ReturnAddressError && err.code === 'credentials_rotated') {
        // The wait can be ended before rotate()'s own answer has come back with the new token.
        if (credentials.token === used) await credentials.rotation;
        if (credentials.token !== used) {
          used = credentials.token;
          continue;
        }
      }
      const delay = Math.min(5000, 200 * 2 ** attempt) * (0.5 + Math.random() / 2);
      if (transient(err) && !tryLater(err) && ++internalErrors >= INTERNAL_ERROR_ATTEMPTS) throw err;
      if (!transient(err) || Date.now() + delay > deadline) throw err;
      failed = true;
      await sleep(delay, signal);
    }
  }
}
