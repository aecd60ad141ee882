// The stdlib-only Python client (clients/python) as a user gets it: `pip install ./clients/python`
// into a fresh virtualenv, then the checks of python_client_check.py run with that venv's python
// (so they import the installed copy, not the source folder) against the live service, and the
// installed console script `return-address-py` is driven too.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startTestService, type TestService } from '../helpers.js';

const python = spawnSync('python3', ['--version'], { encoding: 'utf8' });
const venvDir = mkdtempSync(join(tmpdir(), 'ra-pyvenv-'));
const venvPython = join(venvDir, 'bin', 'python');

/** Why the suite cannot run here (no python3, no venv module), or false. */
function skipReason(): string | false {
  if (python.status !== 0) return 'python3 is not installed';
  const venv = spawnSync('python3', ['-m', 'venv', venvDir], { encoding: 'utf8' });
  if (venv.status !== 0) return `python3 -m venv failed (install python3-venv): ${(venv.stderr || venv.stdout).trim().split('\n').at(-1)}`;
  return false;
}

/** pip install ./clients/python; a missing build backend (no package index reachable) is a skip, any other failure an error. */
function pipInstall(): { ok: true } | { ok: false; skip: string } {
  // From a copy of the folder: setuptools builds in the source tree (build/, *.egg-info), and the
  // same file running on the other store at the same moment would race it ("Directory not empty").
  const source = join(venvDir, 'src', 'return-address');
  cpSync('clients/python', source, { recursive: true, filter: (f) => !/(^|\/)(build|__pycache__|[^/]*\.egg-info)$/.test(f) });
  const r = spawnSync(venvPython, ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', source], {
    encoding: 'utf8',
    timeout: 300_000,
  });
  if (r.status === 0) return { ok: true };
  const out = `${r.stdout}\n${r.stderr}`;
  if (/No matching distribution found for (setuptools|wheel)|Could not find a version that satisfies the requirement (setuptools|wheel)/.test(out)) {
    return { ok: false, skip: 'pip cannot fetch setuptools/wheel to build the package (no package index reachable)' };
  }
  assert.fail(`pip install ./clients/python failed:\n${out}`);
}

const reason = skipReason();
if (reason) rmSync(venvDir, { recursive: true, force: true });

describe('Python client, pip-installed into a virtualenv', { skip: reason }, () => {
  let svc: TestService;
  let installSkip: string | undefined;
  before(async () => {
    const installed = pipInstall();
    if (!installed.ok) installSkip = installed.skip;
    svc = await startTestService();
  });
  after(async () => {
    await svc?.stop();
    rmSync(venvDir, { recursive: true, force: true });
  });

  it('installs as a typed package: py.typed and the module under site-packages, a console script', (t) => {
    if (installSkip) return t.skip(installSkip); // skipped only when pip cannot build the package here (no venv, or no setuptools/wheel offline); the reason is reported
    const r = spawnSync(
      venvPython,
      ['-c', 'import importlib.resources as r, return_address as m; print(m.__file__); print(r.files("return_address").joinpath("py.typed").is_file())'],
      { encoding: 'utf8', cwd: tmpdir() },
    );
    assert.equal(r.status, 0, r.stderr);
    const [file, typed] = r.stdout.trim().split('\n');
    assert.ok(file?.startsWith(join(venvDir, 'lib')) && file.includes('site-packages'), `imported from ${file}, not the venv`);
    assert.equal(typed, 'True');
    const help = spawnSync(join(venvDir, 'bin', 'return-address-py'), ['--help'], { encoding: 'utf8' });
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /\{create,wait,events,get,ack,deliver,delete/);
  });

  it('runs every verb, the CLI and the error types against a live service', async (t) => {
    if (installSkip) return t.skip(installSkip); // skipped only when pip cannot build the package here (no venv, or no setuptools/wheel offline); the reason is reported
    const proc = spawn(venvPython, ['test/client/python_client_check.py', svc.baseUrl], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    proc.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const code = await new Promise<number | null>((resolve) => proc.on('close', resolve));
    t.diagnostic(`${python.stdout.trim()}: ${out.trim().split('\n').at(-1)}`);
    assert.equal(code, 0, out);
    assert.match(out, /all checks passed/);
  });

  it('the console script creates, delivers to and waits on an address', async (t) => {
    if (installSkip) return t.skip(installSkip); // skipped only when pip cannot build the package here (no venv, or no setuptools/wheel offline); the reason is reported
    const save = join(venvDir, 'addr.json');
    // Asynchronous: the service answers from this process, so a synchronous spawn would starve it.
    const cli = (...args: string[]) =>
      new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        const proc = spawn(join(venvDir, 'bin', 'return-address-py'), args, { env: { ...process.env, RETURN_ADDRESS_URL: svc.baseUrl } });
        let stdout = '';
        let stderr = '';
        proc.stdout.on('data', (d: Buffer) => {
          stdout += d.toString();
        });
        proc.stderr.on('data', (d: Buffer) => {
          stderr += d.toString();
        });
        proc.on('close', (status) => resolve({ status, stdout, stderr }));
      });
    const created = await cli('create', '--save', save);
    assert.equal(created.status, 0, created.stderr);
    assert.match(JSON.parse(created.stdout).address.id, /^addr_/);
    const delivered = await cli('deliver', '--save', save, '--type', 'py.cli', '--data', '{"n":1}');
    assert.equal(delivered.status, 0, delivered.stderr);
    const waited = await cli('wait', '--save', save, '--type', 'py.cli', '--timeout', '5');
    assert.equal(waited.status, 0, waited.stderr);
    assert.deepEqual(JSON.parse(waited.stdout).data, { n: 1 });
  });
});
