// `npm run bench`: the service against the ceiling (bench/ceiling-server.ts), side by side.
//
// Starts the ceiling and the built service (dist/src/server.js) as child processes on free ports,
// runs each scenario against both in alternating rounds (so machine noise hits both), checks after
// every ingest scenario that each 2xx is a stored event and that sequences are gapless, then prints
// the table and writes bench/results/latest.json, bench/results/chart.svg and the table section of
// bench/README.md. It reports; it gates nothing (exit code 0 unless the bench itself broke).
//
// Knobs (environment): BENCH_SECONDS (per round, default 4), BENCH_ROUNDS (default 3),
// BENCH_ONLY (comma list of: hot, spread, frames, capture, reads, wake, idle, streams, large, pg, untrusted, retention, filter, waiters, push), BENCH_IDLE_POLLS (default 10000),
// BENCH_RETENTION_STORE (sqlite or postgres: run the retention scenario on that store only),
// BENCH_STREAMS (event streams held on one address in the streams scenario, default 1000),
// BENCH_SERVICE_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the service),
// BENCH_METRICS=1 (the services run with METRICS_PORT set: what the Prometheus series cost a delivery),
// BENCH_PG_URL (admin URL, default postgres://postgres@127.0.0.1:5432/postgres).

import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import vm from 'node:vm';
import autocannon, { type Request as CannonRequest, type Result } from 'autocannon';
import pg from 'pg';
import { filteredReadRows } from './filter-scenario.js';
import { filteredWaiterRows } from './filtered-waiters.js';
import { percentile, pool, request } from './http-client.js';
import { largeEventsScenario } from './large-events.js';
import { type Child, cpuMs, freePort, openFileLimits, rssBytes, sleep, startChild } from './processes.js';
import { pushRows } from './push-delivery.js';
import { type Report, type Row, renderChart, renderTable, updateReadme } from './report.js';
import { postgresTarget, retentionScenario, sqliteTarget } from './retention.js';
import { untrustedParsingRows } from './untrusted-parsing.js';
import { walFramesRows } from './wal-frames.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = 50;
const IDLE_POLLS = Number(process.env.BENCH_IDLE_POLLS ?? 10_000);
const STREAMS = Number(process.env.BENCH_STREAMS ?? 1000);
const ALL_SCENARIOS = [
  'hot',
  'spread',
  'frames',
  'capture',
  'reads',
  'wake',
  'idle',
  'streams',
  'large',
  'pg',
  'untrusted',
  'retention',
  'filter',
  'waiters',
  'push',
];
const ONLY = new Set((process.env.BENCH_ONLY ?? ALL_SCENARIOS.join(',')).split(',').map((s) => s.trim()));
const PG_ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
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
const SERVICE_NODE_ARGS = [...startScriptNodeArgs(), ...(process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(' ').filter(Boolean)];

/** A typical webhook: a payment provider's notification, about 250 bytes. */
const WEBHOOK = JSON.stringify({
  type: 'payment.succeeded',
  source: 'bench',
  data: { id: 'pi_3NbT2x', amount: 4200, currency: 'eur', customer: { id: 'cus_9s6XKzkNRiz8i3', email: 'agent@example.com' }, livemode: false },
  metadata: { attempt: '1', provider: 'stripe' },
});
const JSON_HEADERS = { 'content-type': 'application/json' };

// ---------------------------------------------------------------------------------------------
// Raising the open-file limit: 10,000 long-polls are 10,000 sockets in the bench and in the
// service. A process cannot raise its own limit from JavaScript, so re-run under a shell that does.
{
  const { soft, hard } = openFileLimits();
  const need = Math.max(ONLY.has('idle') ? IDLE_POLLS : 0, ONLY.has('streams') ? STREAMS : 0) + 2000;
  if ((ONLY.has('idle') || ONLY.has('streams')) && soft < need && hard > soft && process.env.BENCH_REEXEC !== '1') {
    const limit = hard === Infinity ? need : Math.min(hard, Math.max(need, soft));
    const r = spawnSync('/bin/sh', ['-c', `ulimit -n ${limit} && exec "$0" "$@"`, process.execPath, ...process.argv.slice(1)], {
      stdio: 'inherit',
      env: { ...process.env, BENCH_REEXEC: '1' },
    });
    process.exit(r.status ?? 1);
  }
}

// ---------------------------------------------------------------------------------------------
interface Addr {
  id: string;
  token: string;
  inboxPath: string;
  hookPath: string;
  eventsPath: string;
}

async function api(url: string, init: { method?: string; body?: string; headers?: Record<string, string> } = {}): Promise<{ status: number; json: any }> {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, json: text === '' ? undefined : JSON.parse(text) };
}

async function createAddress(baseUrl: string): Promise<Addr> {
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

const createAddresses = (baseUrl: string, n: number) => pool(Array.from({ length: n }), 16, () => createAddress(baseUrl));

interface Run {
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
function cannon(target: Run['target'], urls: string[], req: CannonRequest, amount: number, pids: number[]): Promise<Run> {
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

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? (s[(s.length - 1) / 2] as number) : ((s[s.length / 2 - 1] as number) + (s[s.length / 2] as number)) / 2;
};

interface SideBySide {
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
async function sideBySide(label: string, runCeiling: (amount: number) => Promise<Run>, runService: (amount: number) => Promise<Run>): Promise<SideBySide> {
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
async function readBack(baseUrl: string, addrs: Addr[]): Promise<{ stored: number; gapless: boolean }> {
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

function inboxRequest(addrs: Addr[]): CannonRequest {
  const base: CannonRequest = { method: 'POST', headers: JSON_HEADERS, body: WEBHOOK, path: (addrs[0] as Addr).inboxPath };
  if (addrs.length === 1) return base;
  return { ...base, setupRequest: (req) => ({ ...req, path: (addrs[Math.floor(Math.random() * addrs.length)] as Addr).inboxPath }) };
}

// ---------------------------------------------------------------------------------------------
const rows: Row[] = [];
const details: Record<string, unknown> = {};
const t0 = Date.now();
const log = (s: string) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(5)} s] ${s}`);
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

async function startService(dataDir: string, extra: Record<string, string> = {}, nodeArgs = SERVICE_NODE_ARGS): Promise<Child> {
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

async function ingestScenario(key: string, label: string, ceiling: Child, services: Child[], addrs: Addr[], verifyUrl: string): Promise<void> {
  const serviceUrls = services.map((x) => x.url);
  const servicePids = services.map((x) => x.pid);
  log(`${label}: ${CONNECTIONS} connections, ${ROUNDS} alternating rounds of ~${SECONDS} s`);
  const req = inboxRequest(addrs);
  const r = await sideBySide(
    label,
    (n) => cannon('ceiling', [ceiling.url], req, n, [ceiling.pid]),
    (n) => cannon('service', serviceUrls, req, n, servicePids),
  );
  const back = await readBack(verifyUrl, addrs);
  const lossless = back.stored === r.serviceOk && back.gapless && r.serviceErrors === 0;
  log(
    `  verified: ${fmt(r.serviceOk)} answered 2xx, ${fmt(back.stored)} stored, sequences ${back.gapless ? 'gapless' : 'NOT GAPLESS'}, ${r.serviceErrors} errors`,
  );
  const ratio = r.serviceRps / r.ceilingRps;
  const isPg = key === 'pg';
  rows.push({
    key,
    label,
    unit: 'req/s',
    ceiling: r.ceilingRps,
    service: r.serviceRps,
    ratio,
    target: isPg ? 'reported' : '>= 0.7x ceiling',
    met: (isPg ? true : ratio >= 0.7) && lossless,
    note: `${fmt(r.serviceOk)} 2xx = ${fmt(back.stored)} stored, ${back.gapless ? 'gapless' : 'GAPS'}, ${r.serviceErrors} errors; p99 ${median(r.service.map((x) => x.p99))} ms vs ${median(r.ceiling.map((x) => x.p99))} ms`,
  });
  details[key] = { ...r, stored: back.stored, gapless: back.gapless };
  // CPU time per delivery beside the ceiling's per request, paired in the same rounds: steadier than
  // throughput on a shared machine, and what the ingest targets are stated in.
  const cpuC = median(r.ceiling.map((x) => x.cpuUsPerRequest));
  const cpuS = median(r.service.map((x) => x.cpuUsPerRequest));
  const cpuTarget = CPU_TARGETS[key];
  rows.push({
    key: `${key}_cpu`,
    label: `${label}: CPU per delivery`,
    unit: 'µs',
    ceiling: cpuC,
    service: cpuS,
    ratio: cpuS / cpuC,
    target: cpuTarget === undefined ? 'reported' : `<= ${cpuTarget}x ceiling`,
    met: (cpuTarget === undefined || cpuS / cpuC <= cpuTarget) && lossless,
    note: `rounds: service ${r.service.map((x) => x.cpuUsPerRequest.toFixed(0)).join(', ')} µs; ceiling ${r.ceiling.map((x) => x.cpuUsPerRequest.toFixed(0)).join(', ')} µs`,
  });
}

/** Service CPU per delivery at most this multiple of the ceiling's per request: the ingest target. */
const CPU_TARGETS: Record<string, number> = { hot: 1.25, spread: 1.4 };

/** A GitHub push delivery of about 2 KB, the body both sides of the capture scenario carry. */
function githubPush(): string {
  const commit = (i: number) => ({
    id: randomBytes(20).toString('hex'),
    tree_id: randomBytes(20).toString('hex'),
    distinct: true,
    message: `Fix the flux capacitor, part ${i}`,
    timestamp: '2026-11-25T09:00:00Z',
    url: `https://github.com/octocat/Hello-World/commit/${i}`,
    author: { name: 'Mona Lisa Octocat', email: 'mona@github.com', username: 'octocat' },
    added: [],
    removed: [],
    modified: ['src/flux.ts'],
  });
  return JSON.stringify({
    ref: 'refs/heads/main',
    before: randomBytes(20).toString('hex'),
    after: randomBytes(20).toString('hex'),
    created: false,
    deleted: false,
    forced: false,
    repository: {
      id: 1296269,
      node_id: 'MDEwOlJlcG9zaXRvcnkxMjk2MjY5',
      name: 'Hello-World',
      full_name: 'octocat/Hello-World',
      private: false,
      owner: { login: 'octocat', id: 1 },
    },
    pusher: { name: 'octocat', email: 'mona@github.com' },
    sender: { login: 'octocat', id: 1, type: 'User' },
    commits: [commit(1), commit(2), commit(3)],
    head_commit: null,
    compare: 'https://github.com/octocat/Hello-World/compare/a...b',
  });
}

/**
 * The capture URL beside POST /api/v1/inbox on one service, in alternating rounds: the same ~2 KB GitHub push
 * body, sent to the capture URL as GitHub sends it (its headers, a fresh X-GitHub-Delivery per
 * request, so every request is a new event behind a dedupe key) and to the inbox as a CreateEvent
 * with a fresh Idempotency-Key. The table's ceiling column holds POST /api/v1/inbox here.
 */
async function captureScenario(service: Child): Promise<void> {
  const push = githubPush();
  const inbox = await createAddress(service.url);
  const hook = await createAddress(service.url);
  let n = 0;
  const inboxBody = `{"type":"github.push","source":"github","data":${push}}`;
  const inboxReq: CannonRequest = {
    method: 'POST',
    path: inbox.inboxPath,
    headers: JSON_HEADERS,
    body: inboxBody,
    setupRequest: (req) => ({ ...req, headers: { ...JSON_HEADERS, 'idempotency-key': `bench-${++n}` } }),
  };
  const githubHeaders = {
    'content-type': 'application/json',
    'user-agent': 'GitHub-Hookshot/044aadd',
    'x-github-event': 'push',
    'x-github-hook-id': '292430182',
  };
  const hookReq: CannonRequest = {
    method: 'POST',
    path: `${hook.hookPath}/github`,
    headers: githubHeaders,
    body: push,
    setupRequest: (req) => ({ ...req, headers: { ...githubHeaders, 'x-github-delivery': `72d3162e-cc78-11e3-81ab-${String(++n).padStart(12, '0')}` } }),
  };
  const label = `Capture URL vs POST /api/v1/inbox, ${push.length} B GitHub push`;
  log(`${label}: ${CONNECTIONS} connections, ${ROUNDS} alternating rounds of ~${SECONDS} s`);
  const r = await sideBySide(
    label,
    (k) => cannon('ceiling', [service.url], inboxReq, k, [service.pid]),
    (k) => cannon('service', [service.url], hookReq, k, [service.pid]),
  );
  const back = await readBack(service.url, [hook]);
  const lossless = back.stored === r.serviceOk && back.gapless && r.serviceErrors === 0;
  const cpu = (runs: Run[]) => median(runs.map((x) => x.cpuUsPerRequest));
  const ratio = r.serviceRps / r.ceilingRps;
  log(
    `  verified: ${fmt(r.serviceOk)} captures answered 2xx, ${fmt(back.stored)} stored, ${back.gapless ? 'gapless' : 'NOT GAPLESS'}; ` +
      `CPU per request: capture ${cpu(r.service).toFixed(0)} µs, inbox ${cpu(r.ceiling).toFixed(0)} µs`,
  );
  rows.push({
    key: 'capture',
    label: `${label} (ceiling column: POST /api/v1/inbox)`,
    unit: 'req/s',
    ceiling: r.ceilingRps,
    service: r.serviceRps,
    ratio,
    target: '>= 1.0x POST /api/v1/inbox (noise ±10%)',
    met: ratio >= 0.9 && lossless,
    note:
      `${fmt(r.serviceOk)} 2xx = ${fmt(back.stored)} stored, ${back.gapless ? 'gapless' : 'GAPS'}, ${r.serviceErrors} errors; ` +
      `CPU/request ${cpu(r.service).toFixed(0)} µs vs ${cpu(r.ceiling).toFixed(0)} µs; p99 ${median(r.service.map((x) => x.p99))} ms vs ${median(r.ceiling.map((x) => x.p99))} ms`,
  });
  details.capture = { ...r, stored: back.stored, gapless: back.gapless };
}

async function readsScenario(ceiling: Child, service: Child): Promise<void> {
  const label = 'Reads: a page of 50 events';
  log(`${label}`);
  const a = await createAddress(service.url);
  for (let i = 0; i < 50; i++) {
    const r = await api(service.url + a.inboxPath, { method: 'POST', body: WEBHOOK, headers: JSON_HEADERS });
    if (r.status !== 202) throw new Error(`seed: ${r.status}`);
  }
  const page = await api(`${service.url}${a.eventsPath}?limit=50`, { headers: { authorization: `Bearer ${a.token}` } });
  if (page.json?.events?.length !== 50) throw new Error('seed page has not 50 events');
  await api(`${ceiling.url}/bench/page`, { method: 'PUT', body: JSON.stringify(page.json), headers: JSON_HEADERS });
  const req: CannonRequest = { method: 'GET', path: `${a.eventsPath}?limit=50`, headers: { authorization: `Bearer ${a.token}` } };
  const r = await sideBySide(
    'reads',
    (n) => cannon('ceiling', [ceiling.url], req, n, [ceiling.pid]),
    (n) => cannon('service', [service.url], req, n, [service.pid]),
  );
  const ratio = r.serviceRps / r.ceilingRps;
  rows.push({
    key: 'reads',
    label,
    unit: 'req/s',
    ceiling: r.ceilingRps,
    service: r.serviceRps,
    ratio,
    target: '>= 0.5x ceiling',
    met: ratio >= 0.5 && r.serviceErrors === 0,
    note: `${JSON.stringify(page.json).length} bytes per page; ${r.serviceErrors} errors`,
  });
  details.reads = r;
}

const WAKE_ROUNDS = 3;
/** The bench's own garbage collector, to run before timing a round (not the service's). */
v8.setFlagsFromString('--expose-gc');
const collectBenchGarbage = vm.runInNewContext('gc') as () => void;

/**
 * WAKE_ROUNDS rounds; in round r every address receives its r-th event. A few samples of the
 * 1,000 can be delayed by the scheduler (the bench and the service share 2 cores), so the median
 * round is reported, with every round's p99 in the notes.
 */
async function wakeScenario(service: Child, addrs: Addr[], inFlight: number, firstRound: number): Promise<void> {
  const label = 'Long-poll wake latency, 1,000 readers';
  log(`${label}: one delivery each, ${inFlight} in flight, ${WAKE_ROUNDS} rounds`);
  const readers = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  const writers = new http.Agent({ keepAlive: true, maxSockets: 10 });
  const rounds: { p50: number; p99: number; max: number; fromPostP50: number; fromPostP99: number; errors: number; woken: number }[] = [];
  for (let round = 0; round < WAKE_ROUNDS; round++) {
    const waiting = addrs.map((a) =>
      request(readers, new URL(`${service.url}${a.eventsPath}?after=${firstRound + round}&wait=25`), { headers: { authorization: `Bearer ${a.token}` } }),
    );
    await sleep(1000);
    // A collection in the bench between a delivery's answer and its reader's would count as
    // wake latency: collect now, before the clock runs.
    collectBenchGarbage();
    const delivered = await pool(addrs, inFlight, async (a) => {
      const r = await request(writers, new URL(service.url + a.inboxPath), { method: 'POST', headers: JSON_HEADERS, body: WEBHOOK });
      return { ...r, id: r.status === 202 ? (JSON.parse(r.body).event.id as string) : '' };
    });
    const woken = await Promise.all(waiting);
    let errors = 0;
    const lat: number[] = [];
    const fromPost: number[] = [];
    woken.forEach((w, i) => {
      const d = delivered[i];
      const events = w.status === 200 ? (JSON.parse(w.body).events as { id: string }[]) : [];
      if (d?.status !== 202 || events[0]?.id !== d.id) errors++;
      else {
        // Negative when the reader's answer arrives first: it is written in the same turn of the
        // service's event loop as the 202, and can leave before it.
        lat.push(w.endAt - d.endAt);
        fromPost.push(w.endAt - d.startAt);
      }
    });
    lat.sort((x, y) => x - y);
    fromPost.sort((x, y) => x - y);
    rounds.push({
      p50: percentile(lat, 50),
      p99: percentile(lat, 99),
      max: lat.at(-1) ?? NaN,
      fromPostP50: percentile(fromPost, 50),
      fromPostP99: percentile(fromPost, 99),
      errors,
      woken: lat.length,
    });
    const r = rounds.at(-1) as (typeof rounds)[number];
    log(
      `  round ${round + 1}: wake latency p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms, max ${r.max.toFixed(2)} ms; ` +
        `from the POST: p50 ${r.fromPostP50.toFixed(2)} ms, p99 ${r.fromPostP99.toFixed(2)} ms; ${errors} errors`,
    );
  }
  const p50 = median(rounds.map((r) => r.p50));
  const p99 = median(rounds.map((r) => r.p99));
  const errors = rounds.reduce((n, r) => n + r.errors, 0);
  const p99s = rounds.map((r) => r.p99.toFixed(2)).join(', ');
  const max = Math.max(...rounds.map((r) => r.max)).toFixed(2);
  const fromPost =
    `from the POST being sent (durable commit included): p50 ${median(rounds.map((r) => r.fromPostP50)).toFixed(2)} ms, ` +
    `p99 ${median(rounds.map((r) => r.fromPostP99)).toFixed(2)} ms`;
  if (inFlight === 1) {
    rows.push({
      key: 'wake_p50',
      label: 'Long-poll wake latency p50',
      unit: 'ms',
      service: p50,
      target: 'reported',
      met: errors === 0,
      note: `${WAKE_ROUNDS} rounds of 1,000 readers, deliveries one at a time; median round`,
    });
    rows.push({
      key: 'wake_p99',
      label: 'Long-poll wake latency p99',
      unit: 'ms',
      service: p99,
      target: '< 5 ms',
      met: p99 < 5 && errors === 0,
      note: `rounds: ${p99s} ms; max ${max} ms; ${errors} errors; ${fromPost}`,
    });
  } else {
    rows.push({
      key: `wake_p99_${inFlight}`,
      label: `Wake latency p99, ${inFlight} deliveries in flight`,
      unit: 'ms',
      service: p99,
      target: 'reported',
      met: errors === 0,
      note: `rounds: ${p99s} ms; p50 ${p50.toFixed(2)} ms; max ${max} ms; ${errors} errors; ${fromPost}`,
    });
  }
  details[`wake_${inFlight}_in_flight`] = { rounds, p50, p99, errors, readers: addrs.length };
  readers.destroy();
  writers.destroy();
}

/**
 * `after`: how many events each address holds already (the polls wait for the next).
 * `afterWakeRounds`: the same service ran the wake scenarios first; reported beside the target
 * row, since V8 keeps the heap those rounds grew.
 */
async function idleScenario(service: Child, addrs: Addr[], after: number, afterWakeRounds = false): Promise<void> {
  const label = `${fmt(IDLE_POLLS)} idle long-polls held at once${afterWakeRounds ? ', after the wake rounds' : ''}`;
  const { soft } = openFileLimits();
  log(`${label} (wait=25, ${addrs.length} addresses, ulimit -n ${soft})`);
  // Four source addresses, so the sockets do not run short of ephemeral ports.
  const agents = [1, 2, 3, 4].map((x) => new http.Agent({ keepAlive: true, maxSockets: Infinity, localAddress: `127.0.0.${x}` }));
  const rssBefore = rssBytes(service.pid);
  let errors = 0;
  let early = 0;
  let finished = 0;
  const polls: Promise<void>[] = [];
  for (let i = 0; i < IDLE_POLLS; i++) {
    const a = addrs[i % addrs.length] as Addr;
    polls.push(
      request(agents[i % agents.length] as http.Agent, new URL(`${service.url}${a.eventsPath}?after=${after}&wait=25`), {
        headers: { authorization: `Bearer ${a.token}` },
      }).then(
        (r) => {
          finished++;
          if (r.status !== 200 || (JSON.parse(r.body).events as unknown[]).length !== 1) errors++;
        },
        () => {
          finished++;
          errors++;
        },
      ),
    );
    if (i % 500 === 499) await sleep(25);
  }
  // Let the service take every connection in, then wait for its memory to settle.
  let rss = rssBytes(service.pid);
  for (let i = 0; i < 20; i++) {
    await sleep(500);
    const now = rssBytes(service.pid);
    if (Math.abs(now - rss) < 512 * 1024 && i >= 3) {
      rss = now;
      break;
    }
    rss = now;
  }
  early = finished;
  log(
    `  service RSS ${(rssBefore / 2 ** 20).toFixed(1)} MB before, ${(rss / 2 ** 20).toFixed(1)} MB holding ${fmt(IDLE_POLLS)} long-polls (${early} ended early)`,
  );
  // Now wake them all: one delivery per address; every poll must answer 200 with that event.
  const writers = new http.Agent({ keepAlive: true, maxSockets: 10 });
  const w0 = performance.now();
  await pool(addrs, 10, (a) => request(writers, new URL(service.url + a.inboxPath), { method: 'POST', headers: JSON_HEADERS, body: WEBHOOK }));
  await Promise.all(polls);
  const wakeAllMs = performance.now() - w0;
  log(`  all ${fmt(IDLE_POLLS)} answered ${wakeAllMs.toFixed(0)} ms after the first delivery; ${errors} errors`);
  rows.push({
    key: afterWakeRounds ? 'idle_rss_after_wake' : 'idle_rss',
    label,
    unit: 'MB RSS',
    service: rss / 2 ** 20,
    target: afterWakeRounds ? 'reported' : '< 200 MB, 0 errors',
    met: (afterWakeRounds || rss < 200 * 2 ** 20) && errors === 0 && early === 0,
    note: `${(rssBefore / 2 ** 20).toFixed(0)} MB before; ${errors} errors; all woken in ${wakeAllMs.toFixed(0)} ms`,
  });
  details[afterWakeRounds ? 'idle_after_wake' : 'idle'] = { polls: IDLE_POLLS, rssBefore, rss, errors, early, wakeAllMs };
  for (const a of agents) a.destroy();
  writers.destroy();
}

/** One held event stream: its arrival times by sequence. */
interface HeldStream {
  arrivals: Map<number, number>;
  req: http.ClientRequest;
}

function holdStream(agent: http.Agent, url: URL, token: string, opened: () => void, failed: () => void): HeldStream {
  const held: HeldStream = { arrivals: new Map(), req: undefined as unknown as http.ClientRequest };
  held.req = http.get({ agent, host: url.hostname, port: url.port, path: url.pathname, headers: { authorization: `Bearer ${token}` } }, (res) => {
    if (res.statusCode !== 200) return failed();
    opened();
    let buffer = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      const at = performance.now();
      buffer += chunk;
      let end = buffer.indexOf('\n\n');
      while (end !== -1) {
        const m = /^id: (\d+)$/m.exec(buffer.slice(0, end));
        if (m) held.arrivals.set(Number(m[1]), at);
        buffer = buffer.slice(end + 2);
        end = buffer.indexOf('\n\n');
      }
    });
  });
  held.req.on('error', failed);
  return held;
}

/**
 * STREAMS event streams held on one address: the memory each costs (RSS delta / STREAMS, beside
 * the idle long-polls' figure), then deliveries one at a time, each reaching every stream: the
 * fan-out latency from the delivery's 202 to each stream's copy.
 */
async function streamsScenario(service: Child): Promise<void> {
  const label = `${fmt(STREAMS)} event streams held on one address`;
  log(`${label}: memory per stream, then fan-out of ${WAKE_ROUNDS} deliveries to all of them`);
  const a = await createAddress(service.url);
  const url = new URL(`${service.url}${a.eventsPath}/stream`);
  const agents = [1, 2, 3, 4].map((x) => new http.Agent({ keepAlive: false, maxSockets: Infinity, localAddress: `127.0.0.${x}` }));
  const rssBefore = rssBytes(service.pid);
  let opened = 0;
  let failed = 0;
  const streams: HeldStream[] = [];
  for (let i = 0; i < STREAMS; i++) {
    streams.push(
      holdStream(
        agents[i % agents.length] as http.Agent,
        url,
        a.token,
        () => opened++,
        () => failed++,
      ),
    );
    if (i % 250 === 249) await sleep(25);
  }
  for (let i = 0; i < 200 && opened + failed < STREAMS; i++) await sleep(50);
  let rss = rssBytes(service.pid);
  for (let i = 0; i < 20; i++) {
    await sleep(500);
    const now = rssBytes(service.pid);
    if (Math.abs(now - rss) < 256 * 1024 && i >= 3) {
      rss = now;
      break;
    }
    rss = now;
  }
  const perStreamKB = (rss - rssBefore) / STREAMS / 1024;
  log(
    `  service RSS ${(rssBefore / 2 ** 20).toFixed(1)} MB before, ${(rss / 2 ** 20).toFixed(1)} MB holding ${fmt(opened)} streams ` +
      `(${perStreamKB.toFixed(1)} KB each; ${failed} failed)`,
  );
  const writers = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const rounds: { p50: number; p99: number; max: number; missing: number }[] = [];
  for (let round = 1; round <= WAKE_ROUNDS; round++) {
    collectBenchGarbage();
    const d = await request(writers, new URL(service.url + a.inboxPath), { method: 'POST', headers: JSON_HEADERS, body: WEBHOOK });
    if (d.status !== 202) throw new Error(`delivery answered ${d.status}`);
    const seq = JSON.parse(d.body).event.sequence as number;
    for (let i = 0; i < 100 && streams.some((s) => !s.arrivals.has(seq)); i++) await sleep(20);
    const lat = streams
      .flatMap((s) => {
        const at = s.arrivals.get(seq);
        return at === undefined ? [] : [at - d.endAt];
      })
      .sort((x, y) => x - y);
    rounds.push({ p50: percentile(lat, 50), p99: percentile(lat, 99), max: lat.at(-1) ?? NaN, missing: STREAMS - lat.length });
    const r = rounds.at(-1) as (typeof rounds)[number];
    log(
      `  delivery ${round}: reached ${lat.length} streams; after its 202: p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms, max ${r.max.toFixed(2)} ms`,
    );
    await sleep(200);
  }
  const missing = rounds.reduce((n, r) => n + r.missing, 0);
  // Every stream must also hold every sequence, in order, once.
  const gapless = streams.every((s) => [...s.arrivals.keys()].every((k, i) => k === i + 1));
  const idle = details.idle as { polls: number; rssBefore: number; rss: number } | undefined;
  const perPoll = idle ? ` vs ${((idle.rss - idle.rssBefore) / idle.polls / 1024).toFixed(1)} KB per idle long-poll` : '';
  rows.push({
    key: 'stream_rss',
    label: `Memory per held event stream (${fmt(STREAMS)} streams)`,
    unit: 'KB RSS',
    service: perStreamKB,
    target: 'reported',
    met: failed === 0,
    note: `${(rssBefore / 2 ** 20).toFixed(0)} -> ${(rss / 2 ** 20).toFixed(0)} MB RSS${perPoll}; ${failed} failed`,
  });
  const p99 = median(rounds.map((r) => r.p99));
  rows.push({
    key: 'stream_fanout_p99',
    label: `Stream fan-out latency p99, one event to ${fmt(STREAMS)} streams`,
    unit: 'ms',
    service: p99,
    target: 'reported',
    met: missing === 0 && gapless,
    note:
      `after the 202; median of ${WAKE_ROUNDS} deliveries; p50 ${median(rounds.map((r) => r.p50)).toFixed(2)} ms; ` +
      `max ${Math.max(...rounds.map((r) => r.max)).toFixed(2)} ms; ${missing} copies missing; ${gapless ? 'in order' : 'OUT OF ORDER'}`,
  });
  details.streams = { streams: STREAMS, opened, failed, rssBefore, rss, perStreamKB, rounds, gapless };
  for (const s of streams) s.req.destroy();
  for (const x of agents) x.destroy();
  writers.destroy();
}

async function pgScenario(ceiling: Child): Promise<void> {
  const label = 'PostgreSQL ingest, 2 instances, 100 addresses';
  const name = `ra_bench_${randomBytes(5).toString('hex')}`;
  const adminUrl = new URL(PG_ADMIN_URL);
  const dbUrl = new URL(PG_ADMIN_URL);
  dbUrl.pathname = `/${name}`;
  const skip = (reason: string) => {
    log(`${label}: skipped: ${reason}`);
    rows.push({ key: 'pg', label, unit: 'req/s', target: 'reported', met: null, note: `skipped: ${reason}` });
  };
  const admin = new pg.Client({ connectionString: adminUrl.toString() });
  try {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
  } catch (err) {
    await admin.end().catch(() => {});
    return skip(`no PostgreSQL at ${adminUrl.host} (${(err as Error).message})`);
  }
  const dirs = [mkdtempSync(join(os.tmpdir(), 'ra-bench-pg-')), mkdtempSync(join(os.tmpdir(), 'ra-bench-pg-'))];
  const instances: Child[] = [];
  try {
    try {
      for (const d of dirs) instances.push(await startService(d, { DATABASE_URL: dbUrl.toString(), PG_POOL_SIZE: '10' }, []));
      const probe = await createAddress((instances[0] as Child).url);
      const r = await api((instances[1] as Child).url + probe.inboxPath, { method: 'POST', body: WEBHOOK, headers: JSON_HEADERS });
      if (r.status !== 202) throw new Error(`a delivery through the second instance answered ${r.status}`);
    } catch (err) {
      return skip(`the PostgreSQL store is not functional yet: ${(err as Error).message.split('\n')[0]}`);
    }
    const addrs = await createAddresses((instances[0] as Child).url, 100);
    await ingestScenario('pg', label, ceiling, instances, addrs, (instances[1] as Child).url);
  } finally {
    await Promise.all(instances.map((i) => i.stop()));
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    await admin.end().catch(() => {});
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}

/** Delivery latency while retention deletes 100,000 acknowledged events (bench/retention.ts), on each store. */
async function retentionScenarios(): Promise<void> {
  const addresses = async (service: Child, n: number) => (await createAddresses(service.url, n)).map((a) => ({ id: a.id, inboxPath: a.inboxPath }));
  const dir = mkdtempSync(join(os.tmpdir(), 'ra-bench-retention-'));
  try {
    if (process.env.BENCH_RETENTION_STORE !== 'postgres')
      rows.push(
        await retentionScenario(
          'Delivery p99 while retention deletes 100,000 events (SQLite)',
          'retention_sqlite',
          sqliteTarget(dir),
          (env) => startService(dir, env),
          addresses,
          log,
        ),
      );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  if (process.env.BENCH_RETENTION_STORE === 'sqlite') return;
  const name = `ra_bench_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  try {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
  } catch (err) {
    await admin.end().catch(() => {});
    rows.push({
      key: 'retention_pg',
      label: 'Delivery p99 while retention deletes 100,000 events (PostgreSQL)',
      unit: 'ms',
      target: 'reported',
      met: null,
      note: `skipped: ${(err as Error).message}`,
    });
    return;
  }
  const dbUrl = new URL(PG_ADMIN_URL);
  dbUrl.pathname = `/${name}`;
  const pgDir = mkdtempSync(join(os.tmpdir(), 'ra-bench-retention-pg-'));
  try {
    const target = await postgresTarget(dbUrl.toString());
    rows.push(
      await retentionScenario(
        'Delivery p99 while retention deletes 100,000 events (PostgreSQL)',
        'retention_pg',
        target,
        (env) => startService(pgDir, { DATABASE_URL: dbUrl.toString(), ...env }, []),
        addresses,
        log,
      ),
    );
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    await admin.end().catch(() => {});
    rmSync(pgDir, { recursive: true, force: true });
  }
}

function machine() {
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

async function withFreshService(use: (service: Child) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(os.tmpdir(), 'ra-bench-lp-'));
  const service = await startService(dir);
  try {
    await use(service);
  } finally {
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const m = machine();
  const loadBefore = os.loadavg();
  log(`machine: ${m.cpu}, ${m.nproc} cores, ${m.memoryGB} GB, Linux ${m.kernel}, Node ${m.node}; load ${loadBefore.map((x) => x.toFixed(2)).join(' ')}`);
  const dataDir = mkdtempSync(join(os.tmpdir(), 'ra-bench-'));
  const ceilingPort = await freePort();
  const ceiling = await startChild(
    'ceiling',
    join(ROOT, 'dist/bench/ceiling-server.js'),
    { PORT: String(ceilingPort) },
    `http://127.0.0.1:${ceilingPort}`,
    '/api/v1/addresses/x/events',
  );
  const service = await startService(dataDir);
  log(`ceiling ${ceiling.url} (pid ${ceiling.pid}), service ${service.url} (pid ${service.pid}, SQLite in ${dataDir})`);
  try {
    if (ONLY.has('hot')) {
      const hot = [await createAddress(service.url)];
      await ingestScenario('hot', 'Ingest, one hot address', ceiling, [service], hot, service.url);
    }
    if (ONLY.has('spread')) {
      const spread = await createAddresses(service.url, 100);
      await ingestScenario('spread', 'Ingest, 100 addresses', ceiling, [service], spread, service.url);
    }
    if (ONLY.has('frames')) {
      log('WAL frames per commit: the domain service over a SqliteStore in this process, batches of 25 deliveries');
      const frames = await walFramesRows(log);
      rows.push(...frames.rows);
      details.frames = frames.details;
    }
    if (ONLY.has('capture')) await captureScenario(service);
    if (ONLY.has('reads')) await readsScenario(ceiling, service);
    await service.stop();
    // The long-poll scenarios get services of their own, so their memory figures are what the
    // long-polls cost, not what the ingest scenarios left on the heap. The idle target is measured
    // on a fresh service; the same 10,000 polls are held again after the wake rounds, reported.
    if (ONLY.has('idle')) {
      await withFreshService(async (lp) => idleScenario(lp, await createAddresses(lp.url, 1000), 0));
    }
    if (ONLY.has('streams')) await withFreshService(async (sv) => streamsScenario(sv));
    if (ONLY.has('large'))
      await withFreshService(async (sv) => {
        log('large events: memory and event-loop delay under the attacks of the adversarial run');
        rows.push(...(await largeEventsScenario(sv, log)));
      });
    if (ONLY.has('wake')) {
      await withFreshService(async (lp) => {
        const readersAddrs = await createAddresses(lp.url, 1000);
        // One delivery at a time measures the wake-up itself; ten at a time adds the queueing
        // of busy cores on both sides (reported beside it).
        await wakeScenario(lp, readersAddrs, 1, 0);
        await wakeScenario(lp, readersAddrs, 10, WAKE_ROUNDS);
        if (ONLY.has('idle')) await idleScenario(lp, readersAddrs, 2 * WAKE_ROUNDS, true);
      });
    }
    if (ONLY.has('pg')) await pgScenario(ceiling);
    if (ONLY.has('untrusted')) {
      const smtpPort = await freePort();
      const dir = mkdtempSync(join(os.tmpdir(), 'ra-bench-untrusted-'));
      const sv = await startService(dir, { SMTP_PORT: String(smtpPort), EMAIL_DOMAIN: 'bench.test' });
      log('untrusted: mail and parser attacks beside a /healthz probe');
      try {
        rows.push(...(await untrustedParsingRows(sv, smtpPort, log)));
      } finally {
        await sv.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    }
    if (ONLY.has('retention')) await retentionScenarios();
    if (ONLY.has('filter')) rows.push(...(await filteredReadRows({ startService, pgAdminUrl: PG_ADMIN_URL, log })));
    if (ONLY.has('waiters')) rows.push(...(await filteredWaiterRows({ startService, pgAdminUrl: PG_ADMIN_URL, log })));
    if (ONLY.has('push')) rows.push(...(await pushRows({ startService, pgAdminUrl: PG_ADMIN_URL, log })));
  } catch (err) {
    console.error(`bench failed: ${(err as Error).stack}\n--- service output ---\n${service.output()}`);
    process.exitCode = 1;
  } finally {
    await service.stop();
    await ceiling.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  const report: Report = {
    date: new Date().toISOString(),
    machine: m,
    load: { before: loadBefore, after: os.loadavg() },
    settings: { connections: CONNECTIONS, rounds: ROUNDS, secondsPerRound: SECONDS, idlePolls: IDLE_POLLS },
    rows,
    details,
  };
  const table = renderTable(report);
  console.log(`\n${table}\n`);
  const results = join(ROOT, 'bench/results');
  mkdirSync(results, { recursive: true });
  writeFileSync(join(results, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(results, 'chart.svg'), renderChart(report));
  const all = ALL_SCENARIOS.every((x) => ONLY.has(x));
  if (all && process.exitCode !== 1) updateReadme(join(ROOT, 'bench/README.md'), report, table);
  log(`wrote bench/results/latest.json, bench/results/chart.svg${all ? ', bench/README.md' : ''}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
