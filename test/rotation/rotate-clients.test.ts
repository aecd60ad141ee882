// Rotation through the ways a user takes: the `return-address rotate` verb (the bin shim spawned),
// the TypeScript client's rotate(), and the Python module's CLI and method, against the real service.
// Each rewrites what it holds so the next command works with the new credentials, and the old ones
// are refused.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ReturnAddress } from '@return-address/client';
import { runCli } from '../forward/cli-process.js';
import { api, STORE, startTestService, type TestService } from '../helpers.js';

const hasPython = spawnSync('python3', ['--version']).status === 0;

/** python3 with these arguments, asynchronously: the service under test runs in this process. */
function python(args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('python3', args, { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } }, (err, stdout, stderr) =>
      resolve({ status: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe(`rotation from the CLI and the clients (${STORE})`, () => {
  let svc: TestService;
  const dir = mkdtempSync(join(tmpdir(), 'ra-rotate-'));
  before(async () => {
    svc = await startTestService();
  });
  after(async () => {
    await svc.stop();
  });

  it('return-address rotate rewrites the saved file (0600), prints no credential, and the next command works', { timeout: 60_000 }, async () => {
    const env = { RETURN_ADDRESS_URL: svc.baseUrl };
    const file = join(dir, 'cli.json');
    assert.equal((await runCli(['create', '--save', file], env)).code, 0);
    const before = JSON.parse(readFileSync(file, 'utf8'));
    const usage = await runCli(['rotate', '--save', file], env);
    assert.equal(usage.code, 1);
    assert.match(usage.stderr, /--inbox-secret, --read-token/);

    const run = await runCli(['rotate', '--save', file, '--read-token', '--inbox-secret'], env);
    assert.equal(run.code, 0, run.stderr);
    const printed = JSON.parse(run.stdout);
    assert.deepEqual(printed.rotated, ['inbox_secret', 'read_token']);
    assert.doesNotMatch(run.stdout, /aa_read_|aa_ingress_/, 'no credential on stdout');
    const saved = JSON.parse(readFileSync(file, 'utf8'));
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.notEqual(saved.credentials.read_token, before.credentials.read_token);
    assert.notEqual(saved.endpoints.inbox_url, before.endpoints.inbox_url);
    assert.notEqual(saved.endpoints.hook_url, before.endpoints.hook_url);
    assert.equal(saved.address.id, before.address.id);
    assert.equal((await api(svc.baseUrl, 'GET', `/api/v1/addresses/${before.address.id}`, { token: before.credentials.read_token })).status, 401);
    const delivered = await runCli(['deliver', '--save', file, '--data', '{"n":1}'], env);
    assert.equal(delivered.code, 0, delivered.stderr);
    const events = await runCli(['events', '--save', file], env);
    assert.equal(events.code, 0, events.stderr);
    assert.equal(JSON.parse(events.stdout).events.length, 1);
  });

  it('the TypeScript client switches to the new token and inbox URL', async () => {
    const ra = await ReturnAddress.create({ url: svc.baseUrl });
    const oldToken = ra.token;
    const oldInbox = ra.inboxUrl!;
    const r = await ra.rotate({ readToken: true, inboxSecret: true });
    assert.equal(ra.token, r.credentials.read_token);
    assert.equal(ra.inboxUrl, r.endpoints.inbox_url);
    assert.notEqual(ra.token, oldToken);
    assert.equal((await fetch(oldInbox, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status, 404);
    await ra.deliver({ data: 'x' });
    const page = await ra.page({ after: 0 });
    assert.deepEqual(
      page.events.map((e) => e.data),
      ['x'],
    );
  });

  it('the Python module: rotate() and `rotate --save`', { skip: hasPython ? false : 'python3 is not installed' }, async () => {
    const file = join(dir, 'py.json');
    const py = (args: string[]) => python(['clients/python/return_address.py', ...args, '--url', svc.baseUrl]);
    const created = await py(['create', '--save', file]);
    assert.equal(created.status, 0, created.stderr);
    const before = JSON.parse(readFileSync(file, 'utf8'));
    const rotated = await py(['rotate', '--save', file, '--inbox-secret']);
    assert.equal(rotated.status, 0, rotated.stderr);
    assert.doesNotMatch(rotated.stdout, /aa_read_|aa_ingress_/);
    const saved = JSON.parse(readFileSync(file, 'utf8'));
    assert.equal(saved.credentials.read_token, before.credentials.read_token, 'the token was not rotated');
    assert.notEqual(saved.endpoints.inbox_url, before.endpoints.inbox_url);
    const method = await python([
      '-c',
      `import sys; sys.path.insert(0, 'clients/python'); import return_address as m
ra = m.ReturnAddress.load(${JSON.stringify(file)}, ${JSON.stringify(svc.baseUrl)})
old = ra.token
r = ra.rotate(read_token=True)
assert ra.token == r["credentials"]["read_token"] != old
ra.deliver("t", {"n": 2})
print(len(ra.page(0, 10, 0)["events"]))`,
    ]);
    assert.equal(method.status, 0, method.stderr);
    assert.equal(method.stdout.trim(), '1');
  });
});
