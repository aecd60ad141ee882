// The bench's shared setup: its knobs, the service it starts, addresses, the side-by-side rounds of
// autocannon against the ceiling and the service, the read-back that proves every 2xx stored, the
// rows and details the report is made of (bench/report.ts), and the log. bench/run.ts selects the
// rows (BENCH_ONLY) and runs them; each row's scenario is a module of its own beside this one.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import vm from 'node:vm';
import autocannon, { type Request as CannonRequest, type Result } from 'autocannon';
import { pool, request } from './http-client.js';
import { type Child, cpuMs, freePort, startChild } from './processes.js';
import type { Row } from './report.js';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
export const CONNECTIONS = 50;
export const IDLE_POLLS = Number(process.env.BENCH_IDLE_POLLS ?? 10_000);
export const STREAMS = Number(process.env.BENCH_STREAMS ?? 1000);
export const PG_ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/**
 * The Node flags `npm start` runs the service with (package.json), so the bench measures what a
 * user runs; BENCH_SERVICE_NODE_ARGS adds more (profiling, experiments).
 */
function startScriptNodeArgs(): string[] {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
  // `exec node <flags> <entry> [args]`: the flags are the words after `node` that start with `--`.
  const words = pkg.scripts.start.split(/\s+/).filter((w) => w !== 'exec');
  if (words[0] !== 'node') throw new Error(`unexpected start script: ${pkg.scripts.start}`);
  const flags: string[] = [];
  for (const w of words.slice(1)) {
    if (!w.startsWith('--')) break;
    flags.push(w);
  }
  return flags;
}
export const SERVICE_NODE_ARGS = [...startScriptNodeArgs(), ...(process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(' ').filter(Boolean)];

/** A typical webhook: a payment provider's notification, about 250 bytes. */
export const WEBHOOK = JSON.stringify({
  type: 'payment.succeeded',
  source: 'bench',
  data: { id: 'pi_3NbT2x', amount: 4200, currency: 'eur', customer: { id: 'cus_9s6XKzkNRiz8i3', email: 'agent@example.com' }, livemode: false },
  metadata: { attempt: '1', provider: 'stripe' },
});
export const JSON_HEADERS = { 'content-type': 'application/json' };

// ---------------------------------------------------------------------------------------------
export interface Addr {
  id: string;
  token: string;
  inboxPath: string;
  hookPath: string;
  eventsPath: string;
}

export async function api(
  url: string,
  init: { method?: string; body?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; json: any }> {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, json: text === '' ? undefined : JSON.parse(text) };
}

export async function createAddress(baseUrl: string): Promise<Addr> {
  const r = await api(`${baseUrl}/api/v1/addresses`, { method: 'POST', body: '{"name":"bench"}', headers: JSON_HEADERS });
  if (r.status !== 201) throw new Error(`create address: ${r.status} ${JSON.stringify(r.json)}`);
  return {
    id: r.json.address.id,
    token: r.json.credentials.read_token,
    inboxPath: new URL(r.json.endpoints.inbox_url).pathname,
    hookPath: new URL(r.json.endpoints.hook_url).pathname,
    eventsPath: new URL(r.json.endpoints.events_url).pathname,
  };
}

export const createAddresses = (baseUrl: string, n: number) => pool(Array.from({ length: n }), 16, () => createAddress(baseUrl));

export interface Run {
  target: 'ceiling' | 'service';
  rps: number;
  requests: number;
  ok: number;
  /** non-2xx answers, socket errors and timeouts. */
  errors: number;
  p50: number;
  p99: number;
  seconds: number;
  /** CPU time the target process(es) used per request, in microseconds. */
  cpuUsPerRequest: number;
}

/**
 * One autocannon run of exactly `amount` requests (not a duration: a timed run cuts requests off
 * in flight, which the service may still store, and the 2xx count would no longer equal the store).
 * Throughput is measured from the start to the last response, by this process's clock.
 */
export function cannon(target: Run['target'], urls: string[], req: CannonRequest, amount: number, pids: number[]): Promise<Run> {
  return new Promise((resolvePromise, reject) => {
    const perUrl = Math.round(CONNECTIONS / urls.length);
    const cpu = () => pids.reduce((s, pid) => s + cpuMs(pid), 0);
    const cpu0 = cpu();
    const started = performance.now();
    let last = started;
    Promise.all(
      urls.map(
        (url) =>
          new Promise<Result>((res, rej) => {
            const instance = autocannon(
              {
                url,
                connections: perUrl,
                amount: Math.round(amount / urls.length),
                timeout: 30,
                requests: [req],
              },
              (err, result) => (err ? rej(err) : res(result)),
            );
            instance.on('response', () => {
              last = performance.now();
            });
          }),
      ),
    ).then((results) => {
      const seconds = (last - started) / 1000;
      const sum = (f: (r: Result) => number) => results.reduce((s, r) => s + f(r), 0);
      const requests = sum((r) => r.requests.total);
      const cpuUsPerRequest = ((cpu() - cpu0) * 1000) / Math.max(1, requests);
      resolvePromise({
        cpuUsPerRequest,
        target,
        rps: requests / seconds,
        requests,
        ok: sum((r) => r['2xx']),
        errors: sum((r) => r.non2xx + r.errors + r.timeouts),
        p50: Math.max(...results.map((r) => r.latency.p50)),
        p99: Math.max(...results.map((r) => r.latency.p99)),
        seconds,
      });
    }, reject);
  });
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? (s[(s.length - 1) / 2] as number) : ((s[s.length / 2 - 1] as number) + (s[s.length / 2] as number)) / 2;
};

export interface SideBySide {
  ceiling: Run[];
  service: Run[];
  ceilingRps: number;
  serviceRps: number;
  serviceOk: number;
  serviceErrors: number;
}

/**
 * A warm-up of each (which also sizes the rounds to about SECONDS each), then ROUNDS alternating
 * rounds, the order flipping every round (C S, S C, C S): medians of the rounds are reported.
 */
export async function sideBySide(
  label: string,
  runCeiling: (amount: number) => Promise<Run>,
  runService: (amount: number) => Promise<Run>,
): Promise<SideBySide> {
  const warm = Math.max(CONNECTIONS * 20, 10_000);
  const wc = await runCeiling(warm);
  const ws = await runService(warm);
  const amountC = Math.max(CONNECTIONS * 10, Math.round(wc.rps * SECONDS));
  const amountS = Math.max(CONNECTIONS * 10, Math.round(ws.rps * SECONDS));
  const ceiling: Run[] = [];
  const service: Run[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? ['ceiling', 'service'] : ['service', 'ceiling'];
    for (const t of order) {
      if (t === 'ceiling') ceiling.push(await runCeiling(amountC));
      else service.push(await runService(amountS));
    }
    const c = ceiling.at(-1) as Run;
    const s = service.at(-1) as Run;
    log(
      `  ${label} round ${round + 1}: ceiling ${fmt(c.rps)}/s, service ${fmt(s.rps)}/s (${(s.rps / c.rps).toFixed(2)}x); ` +
        `CPU per request ${c.cpuUsPerRequest.toFixed(0)} µs vs ${s.cpuUsPerRequest.toFixed(0)} µs` +
        (s.errors + c.errors ? `, errors: service ${s.errors}, ceiling ${c.errors}` : ''),
    );
  }
  const all = [ws, ...service];
  return {
    ceiling,
    service,
    ceilingRps: median(ceiling.map((r) => r.rps)),
    serviceRps: median(service.map((r) => r.rps)),
    serviceOk: all.reduce((s, r) => s + r.ok, 0),
    serviceErrors: all.reduce((s, r) => s + r.errors, 0),
  };
}

/** Reads every queue back through the events API: how many events, and whether sequences run 1, 2, 3… */
export async function readBack(baseUrl: string, addrs: Addr[]): Promise<{ stored: number; gapless: boolean }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  let stored = 0;
  let gapless = true;
  await pool(addrs, 8, async (a) => {
    let after = 0;
    for (;;) {
      const r = await request(agent, new URL(`${baseUrl}${a.eventsPath}?after=${after}&limit=100`), { headers: { authorization: `Bearer ${a.token}` } });
      if (r.status !== 200) throw new Error(`read back: ${r.status} ${r.body}`);
      const page = JSON.parse(r.body) as { events: { sequence: number }[]; next_cursor: number; has_more: boolean };
      for (const e of page.events) {
        if (e.sequence !== after + 1) gapless = false;
        after = e.sequence;
        stored++;
      }
      if (!page.has_more) break;
    }
  });
  agent.destroy();
  return { stored, gapless };
}

export function inboxRequest(addrs: Addr[]): CannonRequest {
  const base: CannonRequest = { method: 'POST', headers: JSON_HEADERS, body: WEBHOOK, path: (addrs[0] as Addr).inboxPath };
  if (addrs.length === 1) return base;
  return { ...base, setupRequest: (req) => ({ ...req, path: (addrs[Math.floor(Math.random() * addrs.length)] as Addr).inboxPath }) };
}

export const rows: Row[] = [];
export const details: Record<string, unknown> = {};
const t0 = Date.now();
export const log = (s: string) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(5)} s] ${s}`);
export const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

export async function startService(dataDir: string, extra: Record<string, string> = {}, nodeArgs = SERVICE_NODE_ARGS): Promise<Child> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  return startChild(
    'service',
    join(ROOT, 'dist/src/server.js'),
    {
      PORT: String(port),
      HOST: '127.0.0.1',
      BASE_URL: url,
      SMTP_PORT: String(await freePort()),
      SMTP_HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      CREATE_RATE_LIMIT: '1000000',
      MAX_EVENTS_PER_ADDRESS: '100000000',
      MAX_BYTES_PER_ADDRESS: String(2 ** 50),
      // Scenario 7 holds BENCH_STREAMS streams on one address from four source IPs: above the default caps.
      MAX_STREAMS_PER_ADDRESS: String(Math.max(100, STREAMS)),
      MAX_STREAMS_PER_CLIENT: String(Math.max(200, STREAMS)),
      ...(process.env.BENCH_METRICS === '1' ? { METRICS_PORT: '0' } : {}),
      ...extra,
    },
    url,
    '/readyz',
    nodeArgs,
  );
}

export const WAKE_ROUNDS = 3;
/** The bench's own garbage collector, to run before timing a round (not the service's). */
v8.setFlagsFromString('--expose-gc');
export const collectBenchGarbage = vm.runInNewContext('gc') as () => void;

export function machine() {
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
  const model = /^model name\s*:\s*(.*)$/m.exec(cpuinfo)?.[1] ?? os.cpus()[0]?.model ?? 'unknown';
  const mhz = /^cpu MHz\s*:\s*(.*)$/m.exec(cpuinfo)?.[1];
  return {
    cpu: `${model}${mhz ? ` @ ${Math.round(Number(mhz))} MHz` : ''}`,
    nproc: Number(spawnSync('nproc', { encoding: 'utf8' }).stdout.trim() || os.availableParallelism()),
    memoryGB: Math.round(os.totalmem() / 2 ** 30),
    kernel: os.release(),
    node: process.version,
  };
}

export async function withFreshService(use: (service: Child) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(os.tmpdir(), 'ra-bench-lp-'));
  const service = await startService(dir);
  try {
    await use(service);
  } finally {
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
