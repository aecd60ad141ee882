// docs/deploy.md's nginx in front of the service at the scale the guide promises: 10,000 idle
// waiters (5,000 event streams and 5,000 long-polls) held through one nginx worker with the
// guide's worker_rlimit_nofile and worker_connections, every one answered by the deliveries that
// follow, and /healthz answered through the same nginx within a second meanwhile. Then an overload:
// the same site under a small worker_connections (Debian's default is 768) refuses what does not
// fit with the service's JSON 503 and Retry-After, and no log nginx writes, at any level, holds an
// inbox secret or a read token. Loopback only; skipped where nginx is not installed.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createTestStorage, freePort, STORE, sleep, spawnService } from '../helpers.js';
import { call, edit, nginxMissing, ROOT, runNginx } from '../nginx-harness.js';

const ADDRESSES = 100;
const STREAMS_PER_ADDRESS = 50;
const POLLS_PER_ADDRESS = 50;
const WAITERS = ADDRESSES * (STREAMS_PER_ADDRESS + POLLS_PER_ADDRESS);

/** The nginx.conf lines the site file tells the operator to set, read from its comments. */
function guideTopLevel(site: string): { main: string; events: string } {
  const rlimit = /#\s+(worker_rlimit_nofile \d+;)/.exec(site);
  const events = /#\s+events \{ (worker_connections \d+;) \}/.exec(site);
  assert.ok(rlimit && events, 'the site file names worker_rlimit_nofile and worker_connections for nginx.conf');
  return { main: rlimit[1]!, events: events[1]! };
}

/** The site as the tests run it: one upstream (the service), a loopback port, logs in `dir`. */
function site(servicePort: number, port: number, dir: string): string {
  let s = readFileSync(join(ROOT, 'deploy/nginx/compose-postgres.conf'), 'utf8');
  s = edit(s, 'server ra1:3000;', `server 127.0.0.1:${servicePort};`);
  s = edit(s, 'server ra2:3000;', `server 127.0.0.1:${servicePort};`);
  s = edit(s, 'listen 80;', `listen 127.0.0.1:${port};`);
  return edit(s, '/var/log/nginx/', `${dir}/`);
}

function credentialsInLogs(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.log'))
    .filter((f) => /aa_(ingress|read)_/.test(readFileSync(join(dir, f), 'utf8')))
    .map((f) => `${f}:\n${readFileSync(join(dir, f), 'utf8').slice(0, 2000)}`);
}

interface Created {
  id: string;
  token: string;
  inbox: string;
}

async function createVia(origin: string, n: number): Promise<Created[]> {
  const out: Created[] = [];
  for (let i = 0; i < n; i++) {
    const r = await call(origin, 'POST', '/api/v1/addresses', { json: {} });
    assert.equal(r.status, 201, r.text);
    const b = JSON.parse(r.text);
    out.push({ id: b.address.id, token: b.credentials.read_token, inbox: new URL(b.endpoints.inbox_url).pathname });
  }
  return out;
}

/** An event stream held open; resolves `got` when the first event arrives. */
function openStream(origin: string, a: Created, agent: Agent): { opened: Promise<void>; got: Promise<string>; close(): void } {
  let close = () => {};
  let opened!: () => void;
  const openedP = new Promise<void>((r) => {
    opened = r;
  });
  const got = new Promise<string>((resolve, reject) => {
    const req = httpRequest(`${origin}/api/v1/addresses/${a.id}/events/stream`, { headers: { authorization: `Bearer ${a.token}` }, agent }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`stream answered ${res.statusCode}`));
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        text += c;
        if (text.includes(': epoch ')) opened();
        if (text.includes('event: event')) resolve(text);
      });
      res.on('error', () => {});
    });
    req.on('error', reject);
    req.end();
    close = () => req.destroy();
  });
  got.catch(() => opened());
  return { opened: openedP, got, close };
}

async function waiterGauge(metricsUrl: string): Promise<{ long_poll: number; stream: number }> {
  const text = await (await fetch(metricsUrl)).text();
  const of = (kind: string) => Number(new RegExp(`return_address_waiters\\{kind="${kind}"\\} (\\d+)`).exec(text)?.[1] ?? -1);
  return { long_poll: of('long_poll'), stream: of('stream') };
}

describe(`nginx holds 10,000 waiters (${STORE})`, { skip: nginxMissing(), timeout: 600_000 }, () => {
  it(`${WAITERS} idle long-polls and streams through the guide's nginx, all answered; an overload leaks no secret`, { timeout: 600_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ra-nginx-10k-'));
    const storage = await createTestStorage();
    const metricsPort = await freePort();
    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    const svc = await spawnService(
      {
        BASE_URL: origin,
        TRUST_PROXY: '1',
        LOG_LEVEL: 'warn',
        METRICS_PORT: String(metricsPort),
        // Every waiter comes through nginx, so from one client address.
        MAX_STREAMS_PER_CLIENT: String(WAITERS),
        MAX_STREAMS_PER_ADDRESS: String(STREAMS_PER_ADDRESS),
      },
      storage,
    );
    const agent = new Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
    const streams: ReturnType<typeof openStream>[] = [];
    try {
      const conf = site(svc.port, port, dir);
      const nginx = await runNginx(dir, conf, port, guideTopLevel(readFileSync(join(ROOT, 'deploy/nginx/return-address.conf'), 'utf8')));
      try {
        const addrs = await createVia(origin, ADDRESSES);
        const t0 = performance.now();
        for (const a of addrs) for (let i = 0; i < STREAMS_PER_ADDRESS; i++) streams.push(openStream(origin, a, agent));
        await Promise.all(streams.map((s) => s.opened));
        const polls = addrs.flatMap((a) =>
          Array.from({ length: POLLS_PER_ADDRESS }, () => call(origin, 'GET', `/api/v1/addresses/${a.id}/events?wait=25`, { token: a.token, agent })),
        );
        let held = await waiterGauge(`http://127.0.0.1:${metricsPort}/metrics`);
        while (held.long_poll < ADDRESSES * POLLS_PER_ADDRESS && performance.now() - t0 < 120_000) {
          await sleep(200);
          held = await waiterGauge(`http://127.0.0.1:${metricsPort}/metrics`);
        }
        const openMs = Math.round(performance.now() - t0);
        assert.deepEqual(held, { long_poll: ADDRESSES * POLLS_PER_ADDRESS, stream: ADDRESSES * STREAMS_PER_ADDRESS }, 'every waiter is held by the service');
        // Liveness beside them: the proxy still answers at once.
        const probeStart = performance.now();
        const health = await call(origin, 'GET', '/healthz');
        const probeMs = Math.round(performance.now() - probeStart);
        assert.equal(health.status, 200);
        assert.ok(probeMs < 1000, `/healthz through nginx took ${probeMs} ms beside ${WAITERS} waiters`);

        const t1 = performance.now();
        for (const a of addrs) assert.equal((await call(origin, 'POST', a.inbox, { json: { type: 'wake' } })).status, 202);
        const pages = await Promise.all(polls);
        for (const p of pages) {
          assert.equal(p.status, 200, p.text);
          assert.equal(JSON.parse(p.text).events[0]?.type, 'wake');
        }
        const texts = await Promise.all(streams.map((s) => s.got));
        for (const t of texts) assert.match(t, /"type":"wake"/);
        console.log(
          `  ${WAITERS} waiters through nginx (${STORE}): held after ${openMs} ms; /healthz beside them ${probeMs} ms; all answered ${Math.round(performance.now() - t1)} ms after the first of ${ADDRESSES} deliveries`,
        );
        for (const s of streams) s.close();
        streams.length = 0;
      } finally {
        await nginx.stop();
      }
      assert.deepEqual(credentialsInLogs(dir), [], 'no credential in any nginx log');

      // Overload: the same site with too few worker_connections. What does not fit gets JSON 503
      // (or the connection is refused outright); no log line, at any level, quotes a secret.
      const small = mkdtempSync(join(tmpdir(), 'ra-nginx-small-'));
      const smallPort = await freePort();
      const smallOrigin = `http://127.0.0.1:${smallPort}`;
      const nginx2 = await runNginx(small, site(svc.port, smallPort, small), smallPort, { events: 'worker_connections 64;' });
      try {
        const [a] = await createVia(smallOrigin, 1);
        const hold = Array.from({ length: 40 }, () => openStream(smallOrigin, a!, agent));
        streams.push(...hold);
        await sleep(1000);
        const answers = await Promise.all(
          Array.from({ length: 60 }, (_, n) =>
            call(smallOrigin, 'POST', a!.inbox, { json: { data: n }, agent }).catch((err: Error) => ({ status: 0, text: err.message, headers: {} })),
          ),
        );
        const statuses = answers.map((r) => r.status);
        assert.ok(
          statuses.every((s) => s === 202 || s === 503 || s === 0),
          `only 202, JSON 503 or a refused connection: ${statuses.join(',')}`,
        );
        const refused = answers.filter((r) => r.status === 503);
        assert.ok(refused.length + statuses.filter((s) => s === 0).length > 0, 'the overload refused something');
        for (const r of refused) {
          assert.equal(JSON.parse(r.text).error.code, 'unavailable', r.text);
          assert.equal((r.headers as Record<string, string>)['retry-after'], '5');
        }
        console.log(
          `  overload (worker_connections 64, 40 streams held): ${statuses.filter((s) => s === 202).length} stored, ${refused.length} JSON 503, ${statuses.filter((s) => s === 0).length} refused`,
        );
        for (const s of hold) s.close();
      } finally {
        await nginx2.stop();
      }
      const errorLog = readFileSync(join(small, 'nginx-error.log'), 'utf8');
      assert.deepEqual(credentialsInLogs(small), [], `no credential in any nginx log after the overload; the main error log:\n${errorLog.slice(0, 1000)}`);
      rmSync(small, { recursive: true, force: true });
    } finally {
      for (const s of streams) s.close();
      agent.destroy();
      svc.proc.kill('SIGTERM');
      await svc.exited;
      await storage.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
