// `npm start`, `npx return-address serve` and `return-address serve` (design.md, "Running it"): a
// signal sent to the process the user started, npm, npx or the bin, reaches the service, which drains (a long-poll in flight gets its empty
// page) and exits 0, and nothing keeps the ports afterwards. A start does not compile when dist/
// is current: the stale check is tested on a scratch package directory.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { api, createAddress, createTestStorage, freePort, STORE, sleep } from '../helpers.js';

/** Resolves true when the port can be listened on again, i.e. no process holds it. */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** Resolves once no process has the pid any more (bounded: an orphaned service never goes). */
async function gone(pid: number, boundMs: number): Promise<boolean> {
  const t0 = performance.now();
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
    if (performance.now() - t0 > boundMs) return false;
    await sleep(50);
  }
}

/**
 * `npx return-address serve` runs the bin through `sh -c`, which dash does not replace by node:
 * npm forwards the signal to that shell only, and once the shell is gone npm ends itself with the
 * same signal, at once, while the service may still drain. So for npx the test waits for the
 * service's own pid (from its log) to end, and accepts npx ending by the signal it was sent.
 */
/**
 * npx from a checkout links the package into npm's npx cache and runs its `prepare` (a whole build)
 * in the checkout itself: dist/ rewritten while the suite's other files import it (one saw a
 * module half written). The signals are what is tested here, not the install: scripts off, the
 * build the suite already made is used.
 */
const NPX_ENV = { npm_config_ignore_scripts: 'true' };

async function startAndSignal(
  command: string,
  args: string[],
  signal: NodeJS.Signals,
  opts: { readyMs?: number; viaNpx?: boolean; group?: boolean } = {},
): Promise<void> {
  const storage = await createTestStorage();
  const port = await freePort();
  const smtpPort = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const t0 = performance.now();
  // A process group of its own: the signal under test goes to `proc` alone (npm or the bin, as a user
  // would send it), and the cleanup below can still end the service npm started if the test fails.
  const proc = spawn(command, args, {
    env: {
      ...process.env,
      ...(opts.viaNpx ? NPX_ENV : {}),
      PORT: String(port),
      SMTP_PORT: String(smtpPort),
      HOST: '127.0.0.1',
      BASE_URL: baseUrl,
      LOG_LEVEL: 'info',
      ...storage.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  proc.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  proc.stderr.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, sig) => resolve({ code, signal: sig })),
  );
  try {
    for (;;) {
      const ready = await fetch(`${baseUrl}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ready) break;
      assert.equal(proc.exitCode, null, `the service exited before it was ready:\n${out}`);
      assert.ok(performance.now() - t0 < (opts.readyMs ?? 30_000), `not ready within ${(opts.readyMs ?? 30_000) / 1000} s:\n${out}`);
      await sleep(25);
    }
    console.log(`  ${[command, ...args].join(' ')} (${STORE}): ready ${Math.round(performance.now() - t0)} ms after spawn`);
    assert.doesNotMatch(out, /building first/, 'dist/ is current: no compile at start');
    const a = await createAddress(baseUrl);
    const poll = api(baseUrl, 'GET', `/api/v1/addresses/${a.id}/events?wait=25`, { token: a.token });
    await sleep(300); // the long-poll is waiting
    const signalled = performance.now();
    // A terminal's Ctrl-C signals the whole foreground process group; `kill PID` the one process.
    if (opts.group && proc.pid !== undefined) process.kill(-proc.pid, signal);
    else proc.kill(signal);
    const page = await poll;
    const exit = await exited;
    if (opts.viaNpx) {
      const servicePid = Number(/"pid":(\d+)/.exec(out)?.[1]);
      assert.ok(servicePid > 0, `the service's pid is in its log:\n${out}`);
      assert.ok(await gone(servicePid, 15_000), `the service (pid ${servicePid}) still runs 15 s after npx exited: orphaned\n${out}`);
      // npm re-sends the signal to itself once its child is gone (@npmcli/run-script): npx ends by it.
      assert.ok(exit.code === 0 || exit.signal === signal, `exit status of npx after ${signal}: ${JSON.stringify(exit)}`);
      console.log(`  npx ended with ${JSON.stringify(exit)}; the service (pid ${servicePid}) drained and exited`);
    } else {
      assert.deepEqual(exit, { code: 0, signal: null }, `exit status of ${command} after ${signal}; output:\n${out}`);
    }
    assert.ok(performance.now() - signalled < 10_000, 'the drain did not wait out the 25 s long-poll');
    assert.equal(page.status, 200, page.text);
    assert.deepEqual(page.json, { events: [], next_cursor: 0, has_more: false });
    assert.match(out, /shutting down/);
    // Nothing keeps the ports: an orphaned service would still hold them.
    assert.equal(await portIsFree(port), true, `port ${port} is still held after ${command} exited`);
    assert.equal(await portIsFree(smtpPort), true, `SMTP port ${smtpPort} is still held after ${command} exited`);
  } finally {
    // The whole group: killing npm alone left the service it started running, holding its ports
    // (seen when a test failed before its signal was sent).
    try {
      if (proc.pid !== undefined) process.kill(-proc.pid, 'SIGKILL');
    } catch {
      // ESRCH: the group is gone already, as after a clean exit.
    }
    await storage.drop();
  }
}

describe(`start and signals (${STORE})`, () => {
  it('SIGTERM to `npm start` drains and exits 0, the ports free', { timeout: 60_000 }, () => startAndSignal('npm', ['start'], 'SIGTERM'));
  it('SIGINT to `npm start` drains and exits 0, the ports free', { timeout: 60_000 }, () => startAndSignal('npm', ['start'], 'SIGINT'));
  // The first npx run from a checkout links the package into npm's npx cache and runs its `prepare`
  // (a full build): bounded generously.
  it('SIGTERM to `npx return-address serve` drains the service and it exits, the ports free', { timeout: 300_000 }, () =>
    startAndSignal('npx', ['return-address', 'serve'], 'SIGTERM', { readyMs: 240_000, viaNpx: true }),
  );
  // SIGINT to npx's pid alone cannot reach the service: npm passes it to the `sh -c` it started, and
  // dash catches SIGINT while it waits for its child (so that a Ctrl-C ends it only if it ends the
  // child), so nothing changes for the service; docs/deploy.md says so. Ctrl-C signals the group.
  it('SIGINT to the group of `npx return-address serve` (Ctrl-C) drains the service and it exits, the ports free', { timeout: 300_000 }, () =>
    startAndSignal('npx', ['return-address', 'serve'], 'SIGINT', { readyMs: 240_000, viaNpx: true, group: true }),
  );
  it('SIGTERM to `return-address serve` (the bin) drains and exits 0, the ports free', { timeout: 60_000 }, () =>
    startAndSignal(process.execPath, ['bin/return-address.js', 'serve'], 'SIGTERM'),
  );
});

describe('the stale-build check', () => {
  it('builds only when src/ or the build configuration changed since dist/.build-stamp', async () => {
    const bin = '../../../bin/build-if-stale.js'; // plain JS beside the bin, imported as the bin does
    const { staleReason } = (await import(bin)) as { staleReason(dir: string): string | undefined };
    const dir = mkdtempSync(join(tmpdir(), 'ra-stale-'));
    try {
      assert.equal(staleReason(dir), undefined, 'an installed package (no src/) is never rebuilt');
      mkdirSync(join(dir, 'src', 'http'), { recursive: true });
      writeFileSync(join(dir, 'src', 'http', 'a.ts'), '');
      assert.equal(staleReason(dir), 'dist/ has not been built');
      mkdirSync(join(dir, 'dist'));
      const past = new Date(Date.now() - 60_000);
      for (const p of ['src/http/a.ts', 'src/http', 'src']) utimesSync(join(dir, p), past, past);
      writeFileSync(join(dir, 'dist', '.build-stamp'), '');
      assert.equal(staleReason(dir), undefined, 'nothing changed since the build');
      const later = new Date(Date.now() + 5_000);
      utimesSync(join(dir, 'src', 'http', 'a.ts'), later, later);
      assert.equal(staleReason(dir), 'src changed since the last build');
      utimesSync(join(dir, 'src', 'http', 'a.ts'), past, past);
      writeFileSync(join(dir, 'tsconfig.json'), '{}');
      utimesSync(join(dir, 'tsconfig.json'), later, later);
      assert.equal(staleReason(dir), 'tsconfig.json changed since the last build');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
