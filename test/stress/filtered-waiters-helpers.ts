// Helpers of the filtered-waiter stress files (filtered-*.test.ts, wide-json-capture.test.ts): the
// costliest filter the budget takes, an event it examines whole, requests held on their own sockets,
// and a service in its own process.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { MAX_FILTER_COST } from '../../src/domain/event-filter.js';
import { createTestStorage, freePort, range, type SpawnedService, sleep, spawnService } from '../helpers.js';

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
  const answer = new Promise<{ status: number; body: string }>((resolve) => {
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      text += d;
    });
    socket.on('close', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), body: text.slice(text.indexOf('\r\n\r\n') + 4) }));
    socket.on('error', () => {}); // a destroyed socket ends with 'close', which answers what was read
  });
  return { socket, answer };
}

export async function timed<T>(f: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const r = await f();
  return [r, performance.now() - t0];
}

export interface StressService extends SpawnedService {
  /** The service's Prometheus /metrics (METRICS_PORT), to see how many waiters it holds. */
  metricsUrl: string;
}

export async function withService(env: Record<string, string>, body: (svc: StressService) => Promise<void>): Promise<void> {
  const storage = await createTestStorage();
  const metricsPort = await freePort();
  const spawned = await spawnService({ LOG_LEVEL: 'warn', METRICS_PORT: String(metricsPort), METRICS_HOST: '127.0.0.1', ...env }, storage);
  const svc: StressService = Object.assign(spawned, { metricsUrl: `http://127.0.0.1:${metricsPort}/metrics` });
  try {
    await body(svc);
  } finally {
    svc.proc.kill('SIGTERM');
    await svc.exited;
    await storage.drop();
  }
}

/** Waits until the service holds `count` waiters of `kind` (every request sent has arrived and waits), as its metrics say. */
export async function waitForWaiters(svc: StressService, kind: 'long_poll' | 'stream' | 'claim', count: number): Promise<void> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const text = await fetch(svc.metricsUrl).then((r) => r.text());
    const held = Number(new RegExp(`return_address_waiters\\{kind="${kind}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
    if (held >= count) return;
    assert.ok(Date.now() < deadline, `${held} of ${count} ${kind} waiters after 90 s`);
    await sleep(250);
  }
}
