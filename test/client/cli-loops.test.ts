// The traps a first-time agent meets in the CLI, run as a user runs them (the bin shim spawned as a
// process against the real service): `wait --ack` in a loop gets each event once and leaves a
// filtered wait's saved cursor where it was; `create --save` prints no URL that carries the inbox
// secret and says how to read hook_url from the file; the help states --until-idle's range.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { STORE, startTestService, type TestService } from '../helpers.js';

function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string; json: any }> {
  const proc = spawn(process.execPath, ['bin/return-address.js', ...args], {
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
  return new Promise((resolve) =>
    proc.on('close', (code) => {
      let json: unknown;
      try {
        json = stdout ? JSON.parse(stdout) : undefined;
      } catch {
        json = undefined;
      }
      resolve({ code, stdout, stderr, json });
    }),
  );
}

describe(`return-address CLI: loops and saved URLs (${STORE})`, () => {
  let svc: TestService;
  let env: Record<string, string>;
  const dir = mkdtempSync(join(tmpdir(), 'ra-cli-loops-'));
  before(async () => {
    svc = await startTestService();
    env = { RETURN_ADDRESS_URL: svc.baseUrl };
  });
  after(async () => {
    await svc.stop();
  });

  it('wait --ack in a loop returns each event once (filtered or not); create --save says how to read hook_url; help states the ranges', {
    timeout: 110_000,
  }, async () => {
    const file = join(dir, 'loop.json');
    const created = await cli(['create', '--save', file], env);
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stderr, new RegExp(`jq -r \\.endpoints\\.hook_url ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    assert.doesNotMatch(created.stdout, /hook_url|inbox_url|aa_ingress_/, 'no URL that carries the inbox secret on stdout');
    // What the hint says works: the file's endpoints.hook_url takes a delivery.
    const hook = JSON.parse(readFileSync(file, 'utf8')).endpoints.hook_url as string;
    assert.equal((await fetch(`${hook}/ci`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"job":0}' })).status, 202);
    for (const n of [1, 2, 3]) await cli(['deliver', '--save', file, '--type', 'job', '--data', `{"n":${n}}`], env);

    const seen: number[] = [];
    for (let i = 0; i < 3; i++) {
      const w = await cli(['wait', '--save', file, '--type', 'job', '--ack', '--timeout', '5'], env);
      assert.equal(w.code, 0, w.stderr);
      assert.ok(w.json.acknowledged_at);
      seen.push(w.json.data.n);
    }
    assert.deepEqual(seen, [1, 2, 3], 'each event once, in order');
    const drained = await cli(['wait', '--save', file, '--type', 'job', '--ack', '--timeout', '1'], env);
    assert.deepEqual([drained.code, drained.stdout], [2, ''], 'then nothing is left to acknowledge');
    assert.equal(JSON.parse(readFileSync(file, 'utf8')).cursor, 0, 'a filtered wait --ack leaves the saved cursor: the capture is still there');
    const rest = await cli(['wait', '--save', file, '--ack', '--timeout', '5'], env);
    assert.equal(rest.json.type, 'http.request', 'the unfiltered loop gets the event the filtered one passed over');
    assert.equal(JSON.parse(readFileSync(file, 'utf8')).cursor, 1, 'the unfiltered --ack moves the saved cursor past what it acknowledged');
    assert.equal((await cli(['wait', '--save', file, '--ack', '--timeout', '1'], env)).code, 2);

    assert.match((await cli(['consume', '--help'])).stdout, /--until-idle S \(a whole number of seconds, 0 to 25\)/);
    assert.match((await cli(['wait', '--help'])).stdout, /a loop of\s+`wait --ack` returns each matching event once/);
    const badIdle = await cli(['consume', '--save', file, '--exec', 'true', '--until-idle', '26'], env);
    assert.equal(badIdle.code, 1);
    assert.match(badIdle.stderr, /--until-idle must be a whole number of seconds from 0 to 25/);
  });
});
