// Helpers of the filtered-waiter stress files (filtered-*.test.ts, wide-json-capture.test.ts): the
// costliest filter the budget takes, an event it examines whole, requests held on their own sockets,
// and a service in its own process.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { MAX_FILTER_COST } from '../../src/domain/event-filter.js';
import { type Addr, api, createTestStorage, range, type SpawnedService, sleep, spawnService } from '../helpers.js';

export const VALUE = 'v'.repeat(400);
/**
 * The costliest filter the budget takes: conditions of 4 segments, 3 of them numeric (32 JSON
 * look-ups each), as many as fit MAX_FILTER_COST, beside 19 type prefixes and the events' own type.
 * Every condition but the last holds on the events delivered, so each is evaluated.
 */
export function largestFilter(variant: number): [string, string][] {
  const n = MAX_FILTER_COST / 32;
  return [
    ...range(1, 19).map((i): [string, string] => ['type', `${'t'.repeat(100)}${variant}_${i}.*`]),
    ['type', 'x'],
    ...range(1, n - 1).map((i): [string, string] => ['match', `data.a.0.1.${i}=${VALUE}`]),
    ['match', `data.a.0.1.${n}=${VALUE}${variant}`],
  ];
}
/** An event every condition of largestFilter(v) examines; the last one holds only when `matching` is v. */
export function eventFor(matching: number | null) {
  const n = MAX_FILTER_COST / 32;
  const inner: Record<string, string> = Object.fromEntries(range(1, n - 1).map((i) => [String(i), VALUE]));
  inner[String(n)] = matching === null ? 'no' : `${VALUE}${matching}`;
  return { type: 'x', data: { a: [[null, inner]] } };
}

/** A request held on its own socket; `answer` resolves with the status and body once the response has ended. */
export function hold(baseUrl: string, path: string, token: string): { socket: Socket; answer: Promise<{ status: number; body: string }> } {
  const url = new URL(baseUrl);
  const socket = connect(Number(url.port), url.hostname);
  socket.write(`GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`);
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      text += d;
    });
    socket.on('end', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), body: text.slice(text.indexOf('\r\n\r\n') + 4) }));
    socket.on('error', reject);
  });
  return { socket, answer };
}

export async function timed<T>(f: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const r = await f();
  return [r, performance.now() - t0];
}

export async function withService(env: Record<string, string>, body: (svc: SpawnedService) => Promise<void>): Promise<void> {
  const storage = await createTestStorage();
  const svc = await spawnService({ LOG_LEVEL: 'warn', ...env }, storage);
  try {
    await body(svc);
  } finally {
    svc.proc.kill('SIGTERM');
    await svc.exited;
    await storage.drop();
  }
}

export async function waitForWaiters(svc: SpawnedService, a: Addr, count: number): Promise<void> {
  // The held requests are in once a plain read beside them answers after they were all written.
  await sleep(500);
  for (let i = 0; i < 100; i++) {
    const r = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events?limit=1`, { token: a.token });
    assert.equal(r.status, 200);
    if (i >= 2) return;
    await sleep(Math.min(2000, count));
  }
}
