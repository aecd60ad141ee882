// Test harness: real services on real sockets, over a real store chosen by STORE=sqlite|postgres
// (each test file gets its own SQLite file or its own PostgreSQL database, dropped afterwards).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import type { DnsResolver } from '../src/email/sender-authentication.js';
// The service and test/inject.ts are imported when a test first starts one: the whole app is about
// 0.35 s of CPU to load, paid by every test file's process, and a third of the files never start one.
import type { RunningService, StartOptions } from '../src/server.js';

export const STORE = (process.env.STORE ?? 'sqlite') as 'sqlite' | 'postgres';
export const PG_ADMIN_URL = process.env.PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Skip reasons for the few backend-specific tests. */
export const onlyPostgres = STORE === 'postgres' ? false : 'needs STORE=postgres';
export const onlySqlite = STORE === 'sqlite' ? false : 'needs STORE=sqlite';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** A private place to keep data: a temp directory for SQLite, a fresh database for PostgreSQL. */
export interface TestStorage {
  env: Record<string, string>;
  dataDir: string;
  databaseUrl: string | undefined;
  drop(): Promise<void>;
}

export async function createTestStorage(): Promise<TestStorage> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ra-test-'));
  if (STORE === 'sqlite') {
    return { env: { DATA_DIR: dataDir }, dataDir, databaseUrl: undefined, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const name = `ra_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  return {
    env: { DATA_DIR: dataDir, DATABASE_URL: databaseUrl },
    dataDir,
    databaseUrl,
    drop: async () => {
      const c = new pg.Client({ connectionString: PG_ADMIN_URL });
      await c.connect();
      try {
        // Leak check: every service and store on this database must have closed its connections
        // (pool and LISTEN). Backends exit shortly after their client hangs up, so allow a moment.
        const leaked = async () =>
          (
            await c.query<{ app: string }>(
              `SELECT application_name AS app FROM pg_stat_activity WHERE datname = $1 AND application_name LIKE 'return-address%'`,
              [name],
            )
          ).rows.map((r) => r.app);
        let left = await leaked();
        for (let i = 0; i < 100 && left.length > 0; i++) {
          await sleep(20);
          left = await leaked();
        }
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        assert.deepEqual(left, [], 'connections left open on the test database');
      } finally {
        await c.end();
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}

export interface TestService {
  baseUrl: string;
  smtpPort: number;
  running: RunningService;
  storage: TestStorage;
  /** Stops the service; asserts no long-poll waiter leaked; drops the storage unless `keepStorage`. */
  stop(opts?: { keepStorage?: boolean }): Promise<void>;
}

/** The tests' DNS: nothing exists (SPF/DKIM/DMARC come out none), answered at once, offline. */
export const offlineResolver: DnsResolver = async (name) => {
  throw Object.assign(new Error(`queryTxt ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
};

/**
 * Starts the whole service in this process on free ports. `env` overrides configuration;
 * `storage` reuses another service's data (two instances on one database, or a restart).
 */
export async function startTestService(env: Record<string, string> = {}, storage?: TestStorage, opts: StartOptions = {}): Promise<TestService> {
  const st = storage ?? (await createTestStorage());
  // A free port can be taken by another process between the probe and the listen: try again.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const smtpPort = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const config = loadConfig({
      PORT: String(port),
      HOST: '127.0.0.1',
      BASE_URL: baseUrl,
      SMTP_PORT: String(smtpPort),
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      CREATE_RATE_LIMIT: '100000',
      ...st.env,
      ...env,
    });
    let running: RunningService;
    try {
      const { startService } = await import('../src/server.js');
      running = await startService(config, { dnsResolver: offlineResolver, ...opts });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE' && attempt < 5) continue;
      if (!storage) await st.drop().catch(() => {}); // a failed start must not leave its database behind
      throw err;
    }
    return testService(baseUrl, smtpPort, running, st, storage === undefined);
  }
}

function testService(baseUrl: string, smtpPort: number, running: RunningService, st: TestStorage, ownsStorage: boolean): TestService {
  return {
    baseUrl,
    smtpPort,
    running,
    storage: st,
    async stop(opts = {}) {
      await running.stop();
      assert.equal(running.hub.size(), 0, 'no long-poll waiter may outlive the service');
      if (!opts.keepStorage && ownsStorage) await st.drop();
    },
  };
}

export interface Res {
  status: number;
  headers: Headers;
  text: string;
  json: any;
  ms: number;
}

/** The origins test/inject.ts gives its services (injectedAppFor checks the same). */
const INJECTED_ORIGIN = /^https?:\/\/inject-\d+\.test/;

export async function api(
  baseUrl: string,
  method: string,
  path: string,
  opts: { json?: unknown; body?: string; token?: string; headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<Res> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
  let body = opts.body;
  if (opts.json !== undefined) {
    body = JSON.stringify(opts.json);
    headers['content-type'] ??= 'application/json';
  }
  const url = /^https?:/.test(path) ? path : baseUrl + path;
  // An injected service (test/inject.ts) answers through app.inject, without a socket.
  if (INJECTED_ORIGIN.test(url)) {
    const { injectedAppFor, injectRequest } = await import('./inject.js');
    const injected = injectedAppFor(url);
    if (injected) {
      if (opts.signal) throw new Error('an injected service cannot abort a request: keep this test on a socket (startTestService)');
      return injectRequest(injected, method, url, headers, body);
    }
  }
  const t0 = performance.now();
  const res = await fetch(url, { method, headers, body, signal: opts.signal });
  const text = await res.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json, ms: performance.now() - t0 };
}

export interface Addr {
  id: string;
  token: string;
  inboxUrl: string;
  secret: string;
  eventsUrl: string;
  mcpUrl: string;
  email: string;
  slug: string;
  body: any;
}

export async function createAddress(baseUrl: string, json?: unknown): Promise<Addr> {
  const res = await api(baseUrl, 'POST', '/api/v1/addresses', json === undefined ? {} : { json });
  assert.equal(res.status, 201, res.text);
  const b = res.json;
  const inboxUrl: string = b.endpoints.inbox_url;
  return {
    id: b.address.id,
    token: b.credentials.read_token,
    inboxUrl,
    secret: inboxUrl.slice(inboxUrl.lastIndexOf('/') + 1),
    eventsUrl: b.endpoints.events_url,
    mcpUrl: b.endpoints.mcp_url,
    email: b.address.email,
    slug: b.address.slug,
    body: b,
  };
}

export function deliver(baseUrl: string, a: Addr, json: unknown = {}, key?: string): Promise<Res> {
  return api(baseUrl, 'POST', a.inboxUrl, { json, headers: key === undefined ? {} : { 'idempotency-key': key } });
}

export function listEvents(baseUrl: string, a: Addr, query: Record<string, string | number> = {}, signal?: AbortSignal): Promise<Res> {
  const qs = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString();
  return api(baseUrl, 'GET', `/api/v1/addresses/${a.id}/events${qs ? `?${qs}` : ''}`, { token: a.token, signal });
}

export const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * `promise`, or what `late()` returns (or throws) once `ms` have passed without it. The timer is
 * cleared either way: `Promise.race([p, sleep(5000)…])` left its timer running after `p` won, and a
 * test file's process lives until its last timer, so each such race added up to `ms` to the suite.
 */
export async function within<T, U>(promise: Promise<T>, ms: number, late: () => U): Promise<T | U> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<U>((resolve, reject) => {
    timer = setTimeout(() => {
      try {
        resolve(late());
      } catch (err) {
        reject(err);
      }
    }, ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export interface SpawnedService {
  baseUrl: string;
  port: number;
  smtpPort: number;
  proc: import('node:child_process').ChildProcess;
  /** Everything the process wrote to stdout and stderr so far (its logs). */
  output(): string;
  /** Resolves with the exit code (or signal) once the process has ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Runs the built service (dist/src/server.js) as a child process, for what an in-process service
 * cannot show: kill -9, SIGTERM, and the log lines it writes.
 */
export async function spawnService(env: Record<string, string>, storage: TestStorage, reuse?: { port: number; smtpPort: number }): Promise<SpawnedService> {
  // A port found free can be taken by another test's process before the child binds it; the child
  // then exits (EADDRINUSE) while the other process answers /readyz. Ready means this child logged
  // that it listens on its port, and it answers there; a taken port is tried again with new ones.
  for (let attempt = 1; ; attempt++) {
    const svc = await spawnOnce(env, storage, reuse);
    if (typeof svc !== 'string') return svc;
    if (reuse || attempt >= 5) throw new Error(`service did not start:\n${svc}`);
  }
}

/** One start: the running child, or its output when it could not take its port. */
async function spawnOnce(env: Record<string, string>, storage: TestStorage, reuse?: { port: number; smtpPort: number }): Promise<SpawnedService | string> {
  const { spawn } = await import('node:child_process');
  const port = reuse?.port ?? (await freePort());
  const smtpPort = reuse?.smtpPort ?? (await freePort());
  const baseUrl = `http://127.0.0.1:${port}`;
  const proc = spawn(process.execPath, ['dist/src/server.js'], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      BASE_URL: baseUrl,
      SMTP_PORT: String(smtpPort),
      LOG_LEVEL: 'info',
      CREATE_RATE_LIMIT: '100000',
      ...storage.env,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  proc.stderr?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.once('exit', (code, signal) => resolve({ code, signal }));
  });
  // Shown at info and below; a child started at warn answers without saying so.
  const listening = ['trace', 'debug', 'info'].includes(env.LOG_LEVEL ?? 'info') ? `Server listening at ${baseUrl}` : '';
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (out.includes(listening)) {
      try {
        const r = await fetch(`${baseUrl}/readyz`);
        if (r.ok) break;
      } catch {
        // not answering yet
      }
    }
    if (proc.exitCode !== null) {
      await exited;
      if (/EADDRINUSE/.test(out)) return out;
      throw new Error(`service did not start:\n${out}`);
    }
    if (Date.now() > deadline) throw new Error(`service did not start:\n${out}`);
    await sleep(50);
  }
  return { baseUrl, port, smtpPort, proc, output: () => out, exited };
}
