// A checkout whose sources are newer than its build, started where it cannot write (the deploy
// guide's hardened systemd unit): one clear line and exit 78 (EX_CONFIG, which the unit can keep
// from restarting), not a compiler's EACCES stack in a restart loop. Run as an unprivileged user
// when the test runs as root (root may write anywhere), else with the build directory read-only.
// TypeScript is a dev dependency: a writable checkout installed without it (--omit=dev) whose
// sources changed gets the same kind of line, naming the install that brings it back.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';

const root = process.getuid?.() === 0;
const shim = pathToFileURL(resolve('bin/build-if-stale.js')).href;

/** A checkout whose src/ is an hour newer than its build stamp, without node_modules. */
function staleCheckout(dir: string) {
  chmodSync(dir, 0o755);
  mkdirSync(join(dir, 'src'));
  mkdirSync(join(dir, 'dist'));
  writeFileSync(join(dir, 'dist', '.build-stamp'), '');
  const old = new Date(Date.now() - 3_600_000);
  utimesSync(join(dir, 'dist', '.build-stamp'), old, old);
  writeFileSync(join(dir, 'src', 'server.ts'), 'export {};\n');
}

/** buildIfStale(dir) in a process of its own, as `user` when given. */
function runShim(dir: string, user?: { uid: number; gid: number }) {
  return new Promise<{ code: number | null; stderr: string }>((done) => {
    const p = spawn(process.execPath, ['--input-type=module', '-e', `import { buildIfStale } from '${shim}'; buildIfStale(${JSON.stringify(dir)});`], {
      stdio: ['ignore', 'ignore', 'pipe'],
      ...(user ?? {}),
    });
    let stderr = '';
    p.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    p.on('close', (code) => done({ code, stderr }));
  });
}

describe('a stale build under a read-only unit', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ra-stale-'));
  after(() => {
    chmodSync(join(dir, 'dist'), 0o755);
    rmSync(dir, { recursive: true, force: true });
  });

  it('says so in one line and exits 78', async () => {
    staleCheckout(dir);
    if (!root) chmodSync(join(dir, 'dist'), 0o555);
    const run = await runShim(dir, root ? { uid: 65534, gid: 65534 } : undefined);
    assert.equal(run.code, 78, run.stderr);
    const lines = run.stderr.trim().split('\n');
    assert.equal(lines.length, 1, run.stderr);
    assert.match(lines[0]!, /^return-address: src changed since the last build, and .*dist is not writable by this process .*npm run build/);
    assert.doesNotMatch(run.stderr, /EACCES|at .*\(/, 'no stack');
  });
});

describe('a stale build without TypeScript installed (--omit=dev)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ra-stale-notsc-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('says how to build in one line and exits 78, without touching dist/', async () => {
    staleCheckout(dir);
    const run = await runShim(dir);
    assert.equal(run.code, 78, run.stderr);
    const lines = run.stderr.trim().split('\n');
    assert.equal(lines.length, 1, run.stderr);
    assert.match(
      lines[0]!,
      /^return-address: src changed since the last build, and TypeScript \(a dev dependency\) is not installed here .*npm install && npm run build/,
    );
    assert.doesNotMatch(run.stderr, /Cannot find module|ERR_MODULE_NOT_FOUND|at .*\(/, 'no stack');
    assert.deepEqual(readdirSync(join(dir, 'dist')), ['.build-stamp'], 'nothing was built');
  });

  it('a current build starts without TypeScript: nothing at run time needs it', async () => {
    // The same checkout with its stamp newer than every source: no build, no message.
    const now = new Date(Date.now() + 60_000);
    utimesSync(join(dir, 'dist', '.build-stamp'), now, now);
    const run = await runShim(dir);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stderr, '');
  });
});
