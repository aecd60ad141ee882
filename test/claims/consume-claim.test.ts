// `return-address consume --claim --exec CMD` as a user runs it: three worker processes share one
// address; exit 0 acks the claim, a failing command nacks it, and an event that fails on every
// delivery becomes dead after --max-deliveries. TypeScript's consumeClaims() is what it runs.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ReturnAddress } from '@return-address/client';
import { range, STORE, startTestService, type TestService } from '../helpers.js';

function cli(args: string[]) {
  const proc = spawn(process.execPath, ['bin/return-address.js', ...args], { env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  proc.stdout!.resume();
  return new Promise<{ code: number | null; stderr: string }>((resolve) => proc.on('close', (code) => resolve({ code, stderr })));
}

describe(`consume --claim: several workers on one address (${STORE})`, () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(() => svc.stop());

  it('3 workers over 30 events: each good event handled and acked once; an always-failing one nacked, then dead', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ra-claim-'));
    const file = join(dir, 'addr.json');
    const ra = await ReturnAddress.create({ url: svc.baseUrl });
    writeFileSync(file, JSON.stringify({ ...ra.created, cursor: 0, url: svc.baseUrl }), { mode: 0o600 });
    for (const i of range(1, 30)) await ra.deliver({ type: 'job', data: { i } });
    const script = join(dir, 'handler.sh');
    // Every tenth event always fails; the others are logged (appending one short line is atomic).
    writeFileSync(
      script,
      `read -r json
case "$RA_SEQUENCE" in *0) exit 1;; esac
echo "$RA_SEQUENCE" >> "${dir}/handled.log"
`,
    );
    const runs = await Promise.all(
      range(1, 3).map(() =>
        cli(['consume', '--save', file, '--claim', '--exec', `sh ${script}`, '--lease', '5', '--max-deliveries', '2', '--until-idle', '3']),
      ),
    );
    for (const r of runs) assert.equal(r.code, 0, r.stderr);
    const log = existsSync(join(dir, 'handled.log')) ? readFileSync(join(dir, 'handled.log'), 'utf8').split('\n').filter(Boolean).map(Number) : [];
    const good = range(1, 30).filter((i) => i % 10 !== 0);
    assert.deepEqual(
      [...log].sort((a, b) => a - b),
      good,
      'each good event handled exactly once across the three workers',
    );
    assert.ok(
      runs
        .map((r) => r.stderr)
        .join('')
        .includes('exit 1'),
      'the failing command was reported',
    );
    const page = await ra.page({ after: 0, limit: 100 });
    for (const e of page.events) {
      if (e.sequence % 10 === 0) {
        assert.equal(e.acknowledged_at, undefined);
        assert.ok(e.dead_at, `event ${e.sequence} is dead`);
        assert.equal(e.delivery_count, 2);
      } else {
        assert.ok(e.acknowledged_at, `event ${e.sequence} acknowledged`);
        assert.equal(e.delivery_count, 1);
      }
    }
  });
});
