// The Python client's `consume --exec CMD` runs CMD in a process group of its own, as the Node CLI
// does: SIGTERM (or Ctrl-C) to consume ends that whole group, so a handler's own children are not
// left running as orphans, and the event it was handling stays unacknowledged for the next run.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startTestService, type TestService } from '../helpers.js';

const MODULE = 'clients/python/return_address.py';
const hasPython = spawnSync('python3', ['--version']).status === 0;

/** Whether a process with this pid exists (signal 0 probes without sending anything). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function runPython(args: string[]): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('python3', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => {
      stderr += b.toString();
    });
    child.once('exit', (status) => resolve({ status, stderr }));
  });
}

async function until(what: string, check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('python consume ends its handler with the whole process group', { skip: hasPython ? false : 'python3 is not installed' }, () => {
  let svc: TestService;
  let dir: string;
  /** Processes a failed check would leave running (the file would then wait for them until its timeout). */
  const leftovers: { consume?: ChildProcess; pidFile?: string } = {};
  before(async () => {
    svc = await startTestService();
    dir = mkdtempSync(join(tmpdir(), 'ra-pyconsume-'));
  });
  after(async () => {
    if (leftovers.consume && leftovers.consume.exitCode === null && leftovers.consume.signalCode === null) leftovers.consume.kill('SIGKILL');
    try {
      if (leftovers.pidFile) process.kill(Number(readFileSync(leftovers.pidFile, 'utf8').trim()), 'SIGKILL');
    } catch {
      // gone already
    }
    await svc?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('SIGTERM to consume kills the handler and the child it started; the event stays unacknowledged', async () => {
    const save = join(dir, 'addr.json');
    // Not spawnSync: the service runs in this process and must keep answering.
    const created = await runPython([MODULE, 'create', '--url', svc.baseUrl, '--save', save]);
    assert.equal(created.status, 0, created.stderr);
    const saved = JSON.parse(readFileSync(save, 'utf8'));
    const inboxUrl: string = saved.endpoints.inbox_url;
    const eventsUrl: string = saved.endpoints.events_url;
    const token: string = saved.credentials.read_token;
    const res = await fetch(inboxUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'job', data: { n: 1 } }),
    });
    assert.equal(res.status, 202);

    // The handler starts a grandchild and writes its pid, then waits on it.
    const pidFile = join(dir, 'grandchild.pid');
    const cmd = `sleep 300 & echo $! > ${pidFile}; wait`;
    const consume: ChildProcess = spawn('python3', [MODULE, 'consume', '--save', save, '--exec', cmd], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    consume.stderr?.on('data', (b: Buffer) => {
      stderr += b.toString();
    });
    const exited = new Promise<number | null>((resolve) => consume.once('exit', (code) => resolve(code)));
    leftovers.consume = consume;
    leftovers.pidFile = pidFile;
    // The handler's pid file and consume's line naming the group come by two pipes: on a busy
    // machine either can be first, so both are waited for.
    await until('the handler to start its child, and consume to name its group', () => {
      try {
        return /^\d+\s*$/.test(readFileSync(pidFile, 'utf8')) && /process group \d+/.test(stderr);
      } catch {
        return false;
      }
    });
    const grandchild = Number(readFileSync(pidFile, 'utf8').trim());
    const group = Number(/process group (\d+)/.exec(stderr)?.[1]);
    assert.ok(group > 0, `consume names the handler's process group: ${stderr}`);
    assert.ok(alive(grandchild));

    consume.kill('SIGTERM');
    assert.equal(await exited, 0, stderr);
    await until('the grandchild to be gone', () => !alive(grandchild));
    await until('the handler group to be gone', () => !alive(group));

    const page = await fetch(`${eventsUrl}?after=0`, { headers: { authorization: `Bearer ${token}` } });
    const body = (await page.json()) as { events: { acknowledged_at?: string }[] };
    assert.equal(body.events.length, 1);
    assert.ok(body.events[0] && !('acknowledged_at' in body.events[0]), 'the interrupted event is not acknowledged');
  });
});
