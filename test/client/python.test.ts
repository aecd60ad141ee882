// The stdlib-only Python module (clients/python/return_address.py) run by the machine's python3
// against the live service: the checks live in python_client_check.py.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { startTestService, type TestService } from '../helpers.js';

const python = spawnSync('python3', ['--version'], { encoding: 'utf8' });

describe('Python client module', { skip: python.status === 0 ? false : 'python3 is not installed' }, () => {
  let svc: TestService;
  before(async () => { svc = await startTestService(); });
  after(async () => { await svc.stop(); });

  it('runs every verb, the CLI and the error types against a live service', async (t) => {
    const { spawn } = await import('node:child_process');
    const proc = spawn('python3', ['test/client/python_client_check.py', svc.baseUrl], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    proc.stderr.on('data', (d: Buffer) => { out += d.toString(); });
    const code = await new Promise<number | null>((resolve) => proc.on('close', resolve));
    t.diagnostic(`${python.stdout.trim()}: ${out.trim().split('\n').at(-1)}`);
    assert.equal(code, 0, out);
    assert.match(out, /all checks passed/);
  });
});
