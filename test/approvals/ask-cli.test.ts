// `return-address ask` end to end: the CLI spawned as a user runs it against a real service; the
// person answers on the page's URL (read from the CLI's stderr) with the page's form POST.
// Exit 0 for the first option, 1 for another, 2 on expiry or timeout.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { api, STORE, startTestService, type TestService } from '../helpers.js';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI; `onUrl` is called with the approval page's URL as soon as the CLI prints it. */
function cli(args: string[], env: Record<string, string>, onUrl?: (url: string) => Promise<void>): Promise<Run> {
  const proc = spawn(process.execPath, ['bin/return-address.js', ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let answered: Promise<void> = Promise.resolve();
  proc.stdout!.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  proc.stderr!.on('data', (d: Buffer) => {
    const before = stderr;
    stderr += d.toString();
    const url = /(http:\/\/\S+\/approve\/\S+)/.exec(stderr)?.[1];
    if (url && onUrl && !/\/approve\//.test(before)) answered = onUrl(url);
  });
  return new Promise<Run>((resolve) =>
    proc.on('close', (code) => {
      void answered.then(() => resolve({ code, stdout, stderr }));
    }),
  );
}

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

describe(`return-address ask (${STORE})`, () => {
  let svc: TestService;
  let env: Record<string, string>;
  const dir = mkdtempSync(join(tmpdir(), 'ra-ask-'));
  const save = join(dir, 'addr.json');
  before(async () => {
    svc = await startTestService({ MIN_APPROVAL_SECONDS: '1', SWEEP_INTERVAL_SECONDS: '1' });
    env = { RETURN_ADDRESS_URL: svc.baseUrl };
    const created = await cli(['create', '--save', save, '--name', 'ask-test'], env);
    assert.equal(created.code, 0, created.stderr);
  });
  after(async () => {
    await svc.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the first option chosen on the page: the event on stdout, exit 0', { timeout: 30_000 }, async () => {
    const r = await cli(
      [
        'ask',
        '--save',
        save,
        'Approve the $4,197 purchase?',
        '--details',
        'Vendor: ACME\nCard ending 4242',
        '--option',
        'approve=Approve purchase',
        '--option',
        'deny=Deny',
        '--field',
        'note:text:Note for the buyer',
        '--timeout',
        '20',
      ],
      env,
      async (url) => {
        // A link scanner opens it first: nothing is decided.
        assert.equal((await api(svc.baseUrl, 'GET', url, { headers: { 'user-agent': 'Slackbot-LinkExpanding 1.0' } })).status, 200);
        const post = await api(svc.baseUrl, 'POST', url, {
          headers: FORM,
          body: new URLSearchParams({ option: 'approve', 'field.note': 'ok, within budget' }).toString(),
        });
        assert.equal(post.status, 200);
      },
    );
    console.log(
      `# ask transcript\n# $ return-address ask --save addr.json "Approve the $4,197 purchase?" …\n# stderr:\n${r.stderr.replace(/^/gm, '#   ')}\n# stdout:\n${r.stdout.replace(/^/gm, '#   ')}\n# exit ${r.code}`,
    );
    assert.equal(r.code, 0, r.stderr);
    const event = JSON.parse(r.stdout);
    assert.equal(event.type, 'approval.decided');
    assert.equal(event.data.option, 'approve');
    assert.equal(event.data.label, 'Approve purchase');
    assert.deepEqual(event.data.fields, { note: 'ok, within budget' });
    assert.match(r.stderr, /Open this link to answer/);
  });

  it('another option: exit 3, apart from an error (1)', { timeout: 30_000 }, async () => {
    const r = await cli(['ask', '--save', save, 'Deploy on Friday?', '--timeout', '20'], env, async (url) => {
      assert.equal((await api(svc.baseUrl, 'POST', url, { json: { option: 'deny', reason: 'no Friday deploys' } })).status, 200);
    });
    assert.equal(r.code, 3, r.stderr);
    assert.equal(JSON.parse(r.stdout).data.reason, 'no Friday deploys');
    // A service that cannot be reached is an error, never read as a "no".
    const down = await cli(['ask', '--save', save, '--url', 'http://127.0.0.1:1', 'Deploy?', '--timeout', '2'], env);
    assert.equal(down.code, 1, down.stderr);
    assert.equal(down.stdout, '');
  });

  it('nobody answers: exit 2 on expiry (approval.expired) and on --timeout', { timeout: 30_000 }, async () => {
    const expired = await cli(['ask', '--save', save, 'Anyone?', '--expires', '1'], env);
    assert.equal(expired.code, 2, expired.stderr);
    assert.equal(JSON.parse(expired.stdout).type, 'approval.expired');
    const timedOut = await cli(['ask', '--save', save, 'Still there?', '--timeout', '1'], env);
    assert.equal(timedOut.code, 2, timedOut.stderr);
    assert.match(timedOut.stderr, /timed out: no answer to apr_/);
    assert.equal(timedOut.stdout, '');
  });

  it('bad usage: exit 1 naming the problem', async () => {
    const r = await cli(['ask', '--save', save, 'Q', '--field', 'x:colour'], env);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /the type must be one of/);
    const six = await cli(['ask', '--save', save, 'Q', ...[1, 2, 3, 4, 5, 6].flatMap((i) => ['--option', `o${i}=O${i}`])], env);
    assert.equal(six.code, 1);
    assert.match(six.stderr, /invalid_request \(HTTP 400\).*options/);
  });
});
