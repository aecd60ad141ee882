// Signing secrets set from the CLI and from Python, so an agent needs no curl: the recipe "set the secret, then wait
// for data.signature.verified=true" without a hand-written curl, checked with a real signed delivery.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../forward/cli-process.js';
import { type Addr, api, createAddress, listEvents, startTestService, type TestService } from '../helpers.js';

const hasPython = spawnSync('python3', ['--version']).status === 0;

function savedFile(a: Addr): string {
  const file = join(mkdtempSync(join(tmpdir(), 'ra-secrets-')), 'a.json');
  writeFileSync(file, JSON.stringify({ ...a.body, cursor: 0 }), { mode: 0o600 });
  return file;
}

async function signedGithub(a: Addr, secret: string): Promise<any> {
  const body = '{"action":"opened","number":7}';
  const r = await api('', 'POST', a.body.endpoints.hook_url, {
    body,
    headers: {
      'content-type': 'application/json',
      'x-github-event': 'issues',
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
    },
  });
  assert.equal(r.status, 202, r.text);
  return r;
}

function python(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = spawn('python3', args[0] === '-c' ? args : ['clients/python/return_address.py', ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  proc.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise((resolve) => proc.on('close', (code) => resolve({ code, stdout, stderr })));
}

describe('signing secrets from the CLI and Python', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(() => svc.stop());

  it('return-address signing-secrets --github-env: the next signed delivery is verified; a wrong secret is not', async () => {
    const a = await createAddress(svc.baseUrl);
    const file = savedFile(a);
    const env = { RETURN_ADDRESS_URL: svc.baseUrl, GH_SECRET: 'from-the-environment' };
    const set = await runCli(['signing-secrets', '--save', file, '--github-env', 'GH_SECRET', '--slack', 'slack-literal'], env);
    assert.equal(set.code, 0, set.stderr);
    assert.deepEqual(JSON.parse(set.stdout), { configured: ['github', 'slack'] });
    assert.ok(!set.stdout.includes('from-the-environment') && !set.stderr.includes('from-the-environment'), 'the secret is never printed');
    await signedGithub(a, 'from-the-environment');
    await signedGithub(a, 'not-the-secret');
    const events = (await listEvents(svc.baseUrl, a)).json.events;
    assert.deepEqual(
      events.map((e: any) => e.data.signature.verified),
      [true, false],
    );
    const cleared = await runCli(['signing-secrets', '--save', file, '--clear'], env);
    assert.deepEqual(JSON.parse(cleared.stdout), { configured: [] });
  });

  it('usage errors name the fix: nothing given, both forms, an unset variable, --clear with a secret, a bad whsec', async () => {
    const a = await createAddress(svc.baseUrl);
    const file = savedFile(a);
    const env = { RETURN_ADDRESS_URL: svc.baseUrl };
    const cases: [string[], RegExp][] = [
      [[], /give at least one secret/],
      [['--github', 'a', '--github-env', 'X'], /give --github or --github-env, not both/],
      [['--stripe-env', 'NOT_SET_ANYWHERE'], /NOT_SET_ANYWHERE is not set/],
      [['--clear', '--slack', 's'], /--clear removes every secret: give it alone/],
      [['--standard-webhooks', 'not base64!'], /standard_webhooks/],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(['signing-secrets', '--save', file, ...args], env);
      assert.equal(r.code, 1, args.join(' '));
      assert.match(r.stderr, message);
      assert.equal(r.stdout, '');
    }
    const help = await runCli(['--help']);
    assert.match(help.stdout, /signing-secrets +set the secrets/);
  });

  it('Python: set_signing_secrets and the signing-secrets verb', { skip: hasPython ? false : 'python3 is not installed' }, async () => {
    const a = await createAddress(svc.baseUrl);
    const file = savedFile(a);
    const r = await python(['signing-secrets', '--save', file, '--url', svc.baseUrl, '--github-env', 'GH'], { GH: 'py-secret' });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { configured: ['github'] });
    await signedGithub(a, 'py-secret');
    // The service runs in this process: the child is awaited, never run synchronously.
    const fn = await python([
      '-c',
      [
        'import sys, json; sys.path.insert(0, "clients/python")',
        'from return_address import ReturnAddress',
        `ra = ReturnAddress.from_created(json.load(open(${JSON.stringify(file)})), ${JSON.stringify(svc.baseUrl)})`,
        'print(json.dumps(ra.set_signing_secrets(github="py-fn", stripe="whsec_abc")))',
      ].join('\n'),
    ]);
    assert.equal(fn.code, 0, fn.stderr);
    assert.deepEqual(JSON.parse(fn.stdout), { configured: ['github', 'stripe'] });
    await signedGithub(a, 'py-fn');
    const events = (await listEvents(svc.baseUrl, a)).json.events;
    assert.deepEqual(
      events.map((e: any) => e.data.signature.verified),
      [true, true],
    );
    const none = await python(['signing-secrets', '--save', file, '--url', svc.baseUrl], {});
    assert.equal(none.code, 1);
    assert.match(none.stderr, /give at least one secret/);
  });
});
