// A small keep-alive HTTP client for the long-poll scenarios, where autocannon does not fit: each
// request is one real reader whose response time is what gets measured.
import http from 'node:http';

export interface Reply {
  status: number;
  body: string;
  /** performance.now() when the request was handed to the socket. */
  startAt: number;
  /** performance.now() when the last byte of the response arrived. */
  endAt: number;
}

export function request(agent: http.Agent, url: URL, opts: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const startAt = performance.now();
    const req = http.request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: opts.method ?? 'GET',
        headers: opts.body === undefined ? opts.headers : { ...opts.headers, 'content-length': String(Buffer.byteLength(opts.body)) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), startAt, endAt: performance.now() }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** Runs `task` over `items` with at most `concurrency` in flight. */
export async function pool<T, R>(items: readonly T[], concurrency: number, task: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await task(items[i] as T, i);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return out;
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] as number;
}
