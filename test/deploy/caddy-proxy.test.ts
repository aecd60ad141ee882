// deploy/caddy/Caddyfile of docs/deploy.md, run with Debian's Caddy (2.6.2) in front of a real
// service: the file as written, but for the site address (plain HTTP on a free port instead of
// ra.example.com's automatic HTTPS), the upstream's port, the log's folder and `admin off` (two
// runs at once must not share Caddy's admin port). The URLs a create hands out carry the public
// origin; a long-poll and an event stream pass at once; a thousand idle waiters (half long-polls,
// half streams) are held while a delivery wakes its address's waiters and /healthz answers; no log
// holds an inbox secret, a read token or an OAuth code; with the service down a sender gets the
// service's JSON 503 with Retry-After. Skipped, with the reason, where Caddy is not installed
// (.ci/run installs it). CADDY_WAITERS=N sets the waiters' count (docs/deploy.md says what was tried).
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, type IncomingMessage, request } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { range, STORE, sleep } from '../helpers.js';
import { call, edit, ROOT, sendersGetUnavailable } from '../nginx-harness.js';
import { type StressService, waitForWaiters, withService } from '../stress/filtered-waiters-helpers.js';

const WAITERS = Number(process.env.CADDY_WAITERS ?? 1000);
// 50 waiters an address, half of them streams (MAX_STREAMS_PER_ADDRESS is 100 by default).
const ADDRESSES = Math.max(10, Math.ceil(WAITERS / 50));
const CLIENT_IPS = 50;

function caddyMissing(): string | false {
  try {
    execFileSync('caddy', ['version'], { stdio: 'ignore' });
    return false;
  } catch {
    return 'Caddy is not installed (apt-get install -y caddy; .ci/run installs it)';
  }
}

/** The guide's Caddyfile with only what a test host must change. */
function guideCaddyfile(dir: string, port: number, upstreamPort: number): string {
  let conf = readFileSync(join(ROOT, 'deploy/caddy/Caddyfile'), 'utf8');
  conf = edit(conf, /^ra\.example\.com \{$/m, `{\n\tadmin off\n}\n\nhttp://127.0.0.1:${port} {\n\tbind 127.0.0.1`);
  conf = edit(conf, 'reverse_proxy 127.0.0.1:3000 {', `reverse_proxy 127.0.0.1:${upstreamPort} {`);
  return edit(conf, '/var/log/caddy/', `${dir}/`);
}

async function runCaddy(dir: string, conf: string, origin: string): Promise<{ proc: ChildProcess; stop(): Promise<void> }> {
  const path = join(dir, 'Caddyfile');
  writeFileSync(path, conf);
  // Caddy's own log (stderr) is kept too: it must not hold a secret either.
  const out = createWriteStream(join(dir, 'caddy.log'));
  const proc = spawn('caddy', ['run', '--config', path, '--adapter', 'caddyfile'], {
    env: { PATH: process.env.PATH ?? '', HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout?.pipe(out);
  proc.stderr?.pipe(out);
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const stop = async () => {
    // Caddy drains open connections on SIGTERM; held long-polls would keep it: SIGKILL after a moment.
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 3000);
    await exited;
    clearTimeout(timer);
  };
  const until = Date.now() + 30_000;
  for (;;) {
    if (proc.exitCode !== null) assert.fail(`caddy exited: ${readFileSync(join(dir, 'caddy.log'), 'utf8')}`);
    try {
      if ((await call(origin, 'GET', '/healthz')).status === 200) return { proc, stop };
    } catch {
      // not listening yet
    }
    if (Date.now() > until) {
      await stop();
      assert.fail(`caddy did not answer within 30 s: ${readFileSync(join(dir, 'caddy.log'), 'utf8')}`);
    }
    await sleep(100);
  }
}

interface Address {
  id: string;
  token: string;
  inbox: string;
}

async function create(origin: string, agent?: Agent): Promise<Address & { body: any }> {
  const r = await call(origin, 'POST', '/api/v1/addresses', { json: {}, ...(agent ? { agent } : {}) });
  assert.equal(r.status, 201, r.text);
  const body = JSON.parse(r.text);
  return { id: body.address.id, token: body.credentials.read_token, inbox: body.endpoints.inbox_url, body };
}

/** A long-poll and an event stream pass through Caddy as soon as an event is stored. */
async function passesAtOnce(origin: string, svc: StressService): Promise<void> {
  const a = await create(origin);
  for (const [name, url] of Object.entries(a.body.endpoints as Record<string, string>)) {
    if (/^https?:/.test(url)) assert.ok(url.startsWith(`${origin}/`), `${name} ${url} carries the public origin ${origin}`);
  }
  const poll = call(origin, 'GET', `/api/v1/addresses/${a.id}/events?wait=20`, { token: a.token });
  await waitForWaiters(svc, 'long_poll', 1);
  const t0 = performance.now();
  assert.equal((await call(origin, 'POST', a.inbox, { json: { type: 'first' } })).status, 202);
  assert.equal(JSON.parse((await poll).text).events[0]?.type, 'first');
  // Woken by the delivery, not by the 20 s wait's end (half of it is the bound, for a busy machine).
  assert.ok(performance.now() - t0 < 10_000, `the long-poll answered ${Math.round(performance.now() - t0)} ms after the delivery`);

  let streamed = '';
  const stream = call(origin, 'GET', `/api/v1/addresses/${a.id}/events/stream?after=1`, {
    token: a.token,
    onData: (c) => {
      streamed += c;
    },
  });
  await waitForWaiters(svc, 'stream', 1);
  assert.equal((await call(origin, 'POST', a.inbox, { json: { type: 'second' } })).status, 202);
  // A bound for a proxy that buffers (it would hold the event until the DELETE below ends the response).
  const t1 = performance.now();
  while (!streamed.includes('"type":"second"') && performance.now() - t1 < 10_000) await sleep(25);
  assert.match(streamed, /id: 2\nevent: event\ndata: \{.*"type":"second"/, 'the streamed event passed Caddy unbuffered');
  assert.equal((await call(origin, 'DELETE', `/api/v1/addresses/${a.id}`, { token: a.token })).status, 204);
  await stream;
}

/** WAITERS idle waiters through Caddy; a delivery wakes every waiter of its address; /healthz answers. */
async function holdsWaiters(origin: string, svc: StressService): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
  const open: import('node:http').ClientRequest[] = [];
  const errors: string[] = [];
  let stopping = false;
  try {
    const addresses: Address[] = [];
    for (const _ of range(1, ADDRESSES)) addresses.push(await create(origin, agent));
    const seen = Array.from({ length: WAITERS }, () => '');
    const started = performance.now();
    for (let i = 0; i < WAITERS; i++) {
      // Waiters 2k and 2k+1 share an address: every address has long-polls and streams.
      const a = addresses[Math.floor(i / 2) % ADDRESSES]!;
      const path = i % 2 === 0 ? `/api/v1/addresses/${a.id}/events?wait=25` : `/api/v1/addresses/${a.id}/events/stream`;
      // From 50 client addresses (Caddy passes each on in X-Forwarded-For), so that no per-client cap
      // of the service is what is tested.
      const localAddress = `127.0.1.${1 + (i % CLIENT_IPS)}`;
      const req = request(`${origin}${path}`, { agent, localAddress, headers: { authorization: `Bearer ${a.token}` } }, (res: IncomingMessage) => {
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          seen[i] += c;
        });
        res.on('end', () => {
          if (!stopping && res.statusCode !== 200) errors.push(`waiter ${i}: ${res.statusCode} ${seen[i]}`);
        });
      });
      req.on('error', (err) => {
        if (!stopping) errors.push(`waiter ${i}: ${err.message}`);
      });
      req.end();
      open.push(req);
    }
    await waitForWaiters(svc, 'long_poll', WAITERS / 2);
    await waitForWaiters(svc, 'stream', WAITERS / 2);
    console.log(`  ${WAITERS} waiters held through Caddy in ${Math.round(performance.now() - started)} ms (${STORE})`);

    const target = addresses[0]!;
    assert.equal((await call(origin, 'POST', target.inbox, { json: { type: 'wake' } })).status, 202);
    const mine = range(0, WAITERS - 1).filter((i) => Math.floor(i / 2) % ADDRESSES === 0);
    assert.ok(mine.some((i) => i % 2 === 0) && mine.some((i) => i % 2 === 1), 'the woken address has long-polls and streams');
    const until = Date.now() + 20_000;
    while (mine.some((i) => !seen[i]!.includes('"type":"wake"')) && Date.now() < until) await sleep(50);
    assert.deepEqual(
      mine.filter((i) => !seen[i]!.includes('"type":"wake"')),
      [],
      "every waiter of the delivery's address got the event",
    );
    assert.equal((await call(origin, 'GET', '/healthz')).status, 200);
    assert.deepEqual(errors, []);
  } finally {
    stopping = true;
    for (const r of open) r.destroy();
    agent.destroy();
  }
}

/** Requests carrying every kind of credential, then: no log of Caddy's holds one. */
async function logsHoldNoSecret(origin: string, dir: string): Promise<void> {
  const b = await create(origin);
  const secret = b.inbox.slice(b.inbox.lastIndexOf('/') + 1);
  const path = new URL(b.inbox).pathname;
  await call(origin, 'POST', path, { json: { data: 'plain' } });
  await call(origin, 'POST', path.replace('/inbox/', '/%69nbox/'), { json: { data: 'encoded' } });
  await call(origin, 'GET', `${path.replace('/inbox/', '/hooks/')}/oauth?code=OAUTHCODE4711&state=s`);
  await call(origin, 'GET', `/api/v1/addresses/${b.id}/events?token=${b.token}`);
  await call(origin, 'GET', `/nowhere/${b.token}`);
  await sleep(200);
  const access = readFileSync(join(dir, 'return-address.access.log'), 'utf8');
  const own = readFileSync(join(dir, 'caddy.log'), 'utf8');
  for (const [name, text] of [
    ['access log', access],
    ["Caddy's own log", own],
  ] as const) {
    for (const [what, value] of [
      ['inbox secret', secret],
      ['read token', b.token],
      ['OAuth code', 'OAUTHCODE4711'],
    ]) {
      assert.ok(!text.includes(value!), `the ${name} holds the ${what}`);
    }
  }
  const uris = access
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l).request.uri as string);
  assert.ok(
    uris.every((u) => !u.includes('?')),
    `no query in the access log: ${uris.filter((u) => u.includes('?')).join(' ')}`,
  );
  assert.ok(uris.includes(`/api/v1/inbox/${b.id}/[REDACTED]`), uris.join('\n'));
  assert.ok(uris.includes(`/api/v1/hooks/${b.id}/[REDACTED]/oauth[REDACTED]`), uris.join('\n'));
}

describe(`Caddy in front of the service (${STORE})`, { skip: caddyMissing(), timeout: 300_000 }, () => {
  it('deploy/caddy/Caddyfile as written: public URLs, long-polls and streams at once, idle waiters held, a secret-free log, JSON 503 while the service is down', {
    timeout: 240_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ra-caddy-'));
    try {
      // Caddy's port is held open until Caddy starts, so the service's own free ports cannot take it.
      const holder = createServer();
      await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
      const port = (holder.address() as AddressInfo).port;
      const origin = `http://127.0.0.1:${port}`;
      let caddy: Awaited<ReturnType<typeof runCaddy>> | undefined;
      let inbox = '';
      try {
        await withService({ BASE_URL: origin, TRUST_PROXY: '1', LOG_LEVEL: 'warn' }, async (svc) => {
          await new Promise((resolve) => holder.close(resolve));
          caddy = await runCaddy(dir, guideCaddyfile(dir, port, svc.port), origin);
          await passesAtOnce(origin, svc);
          await holdsWaiters(origin, svc);
          await logsHoldNoSecret(origin, dir);
          inbox = (await create(origin)).inbox;
          // A stop is not held by Caddy's pooled connections to the service: answered after the stop
          // began, they were left open until the socket timeout (55 s on PostgreSQL). A bound for that
          // hang, not a speed claim.
          const t0 = performance.now();
          svc.proc.kill('SIGTERM');
          await svc.exited;
          const stopS = (performance.now() - t0) / 1000;
          console.log(`  the service stopped ${stopS.toFixed(1)} s after SIGTERM behind Caddy (${STORE})`);
          assert.ok(stopS < 20, `the service took ${stopS.toFixed(1)} s to stop behind Caddy`);
        });
        // withService has stopped the service: Caddy cannot reach it.
        await sendersGetUnavailable(origin, inbox);
        await sleep(200);
        const secret = inbox.slice(inbox.lastIndexOf('/') + 1);
        for (const name of ['return-address.access.log', 'caddy.log']) {
          const text = readFileSync(join(dir, name), 'utf8');
          assert.ok(!text.includes(secret) && !text.includes('aa_read_x'), `${name} holds a credential while the service is down`);
        }
      } finally {
        await caddy?.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
