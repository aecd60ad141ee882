// `return-address consume --exec` as a user runs it (design.md, "Reading without loss"): the CLI spawned as a
// process, a shell command as the handler. A handler that fails once is retried on the same event,
// in order; a consumer killed with SIGKILL again and again, while events keep arriving, hands every
// event to the handler, in order, none skipped (the one in flight may be handed over twice).
// TypeScript's consume() follows the same rules with a named consumer.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ReturnAddress } from '@return-address/client';
import { range, STORE, sleep, startTestService, type TestService } from '../helpers.js';

function cli(args: string[]) {
  const proc = spawn(process.execPath, ['bin/return-address.js', ...args], { env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  proc.stdout!.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  proc.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string; stdout: string }>((resolve) =>
    proc.on('close', (code, signal) => resolve({ code, signal, stderr, stdout })),
  );
  return { proc, done };
}

/** Whether a process runs (a zombie, ended but not yet reaped by whoever adopted it, does not). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** A handler in sh: checks the event JSON on stdin carries RA_EVENT_ID, logs RA_SEQUENCE, and fails once on `failOn`. */
function handlerCommand(dir: string, failOn: number): string {
  const script = join(dir, 'handler.sh');
  writeFileSync(
    script,
    `read -r json
case "$json" in *"\\"id\\":\\"$RA_EVENT_ID\\""*) ;; *) echo "stdin is not event $RA_EVENT_ID" >&2; exit 3;; esac
case "$RA_EVENT_TYPE" in job|other) ;; *) exit 4;; esac
if [ "$RA_SEQUENCE" = "${failOn}" ] && [ ! -f "${dir}/failed-once" ]; then touch "${dir}/failed-once"; exit 1; fi
sleep 0.01
echo "$RA_SEQUENCE" >> "${dir}/handled.log"
`,
  );
  return `sh ${script}`;
}

const handledLog = (dir: string): number[] =>
  existsSync(join(dir, 'handled.log')) ? readFileSync(join(dir, 'handled.log'), 'utf8').split('\n').filter(Boolean).map(Number) : [];

/** handled / repeated / skipped, and whether every first appearance is in ascending order. */
function tally(log: number[], expected: number[]) {
  const distinct = new Set(log);
  const firsts = log.filter((s, i) => log.indexOf(s) === i);
  return {
    handled: distinct.size,
    repeated: log.length - distinct.size,
    skipped: expected.filter((s) => !distinct.has(s)).length,
    unexpected: [...distinct].filter((s) => !expected.includes(s)).length,
    inOrder: firsts.every((s, i) => i === 0 || s > firsts[i - 1]!),
  };
}

describe(`consume: at-least-once delivery to a command (${STORE})`, () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(async () => {
    await svc.stop();
  });

  it('a handler that fails once is run again for the same event; every event once, in order; all acked', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ra-consume-'));
    const file = join(dir, 'addr.json');
    const ra = await ReturnAddress.create({ url: svc.baseUrl });
    writeFileSync(file, JSON.stringify({ ...ra.created, cursor: 0, url: svc.baseUrl }), { mode: 0o600 });
    for (const i of range(1, 12)) await ra.deliver({ type: 'job', data: { i } });
    const run = cli(['consume', '--save', file, '--exec', handlerCommand(dir, 5), '--until-idle', '1']);
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /sequence 5 job exit 1/);
    assert.deepEqual(handledLog(dir), range(1, 12), 'the failed event was retried before the next one');
    assert.equal(JSON.parse(readFileSync(file, 'utf8')).cursor, 12);
    const page = await ra.page({ after: 0, limit: 100 });
    assert.ok(
      page.events.every((e) => e.acknowledged_at),
      'exit 0 acknowledged each event',
    );
  });

  it('SIGKILLed 4 times while events arrive: every event handled, in order, none skipped', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'ra-consume-'));
    const file = join(dir, 'addr.json');
    const ra = await ReturnAddress.create({ url: svc.baseUrl });
    writeFileSync(file, JSON.stringify({ ...ra.created, cursor: 0, url: svc.baseUrl }), { mode: 0o600 });
    const TOTAL = 150;
    const expected: number[] = [];
    // Events keep arriving while the consumer runs and is killed; every fifth is filtered out.
    const producing = (async () => {
      for (const i of range(1, TOTAL)) {
        const d = await ra.deliver({ type: i % 5 === 0 ? 'noise' : 'job', data: { i } });
        if (i % 5 !== 0) expected.push(d.event.sequence);
        if (i % 10 === 0) await sleep(30);
      }
    })();
    const command = handlerCommand(dir, 17);
    let kills = 0;
    for (; kills < 4; kills++) {
      const run = cli(['consume', '--save', file, '--exec', command, '--type', 'job']);
      const before = handledLog(dir).length;
      const until = Date.now() + 20_000;
      while (handledLog(dir).length < before + 12 + kills * 3 && Date.now() < until) await sleep(5);
      run.proc.kill('SIGKILL');
      const r = await run.done;
      assert.equal(r.signal, 'SIGKILL', r.stderr);
    }
    await producing;
    const last = cli(['consume', '--save', file, '--exec', command, '--type', 'job', '--until-idle', '1']);
    const r = await last.done;
    assert.equal(r.code, 0, r.stderr);
    const counts = tally(handledLog(dir), expected);
    t.diagnostic(
      `consume --exec, ${kills} SIGKILLs, ${expected.length} matching events of ${TOTAL}: ` +
        `handled ${counts.handled}, repeated ${counts.repeated}, skipped ${counts.skipped}`,
    );
    writeFileSync(join(tmpdir(), `ra-consume-kill-counts-${STORE}.json`), JSON.stringify({ kills, events: expected.length, ...counts }));
    assert.deepEqual(
      { handled: counts.handled, skipped: counts.skipped, unexpected: counts.unexpected, inOrder: counts.inOrder },
      { handled: expected.length, skipped: 0, unexpected: 0, inOrder: true },
    );
    assert.ok(counts.repeated <= kills, `at most the event in flight is repeated per kill (${counts.repeated} repeats)`);
    assert.equal(JSON.parse(readFileSync(file, 'utf8')).cursor, TOTAL, 'the cursor ends past the filtered-out events too');
  });

  for (const [signal, claim] of [
    ['SIGTERM', false],
    ['SIGINT', true],
  ] as const) {
    it(`${signal} to consume${claim ? ' --claim' : ''} ends its running handler and what the handler started, then consume exits 0`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'ra-consume-'));
      const file = join(dir, 'addr.json');
      const ra = await ReturnAddress.create({ url: svc.baseUrl });
      writeFileSync(file, JSON.stringify({ ...ra.created, cursor: 0, url: svc.baseUrl }), { mode: 0o600 });
      await ra.deliver({ type: 'job', data: { i: 1 } });
      // The handler starts a child of its own and sleeps: both must go when consume is stopped.
      const handler = `sleep 60 & echo $! > ${dir}/child.pid; echo $$ > ${dir}/handler.pid; wait`;
      const run = cli(['consume', '--save', file, '--exec', handler, ...(claim ? ['--claim'] : [])]);
      const until = Date.now() + 20_000;
      while (!(existsSync(join(dir, 'child.pid')) && existsSync(join(dir, 'handler.pid'))) && Date.now() < until) await sleep(20);
      await sleep(50);
      const pids = ['handler.pid', 'child.pid'].map((f) => Number(readFileSync(join(dir, f), 'utf8').trim()));
      assert.ok(
        pids.every((p) => p > 0 && alive(p)),
        `the handler and its child run: ${pids}`,
      );
      run.proc.kill(signal);
      const r = await run.done;
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /started \(process group \d+\)/);
      const gone = Date.now() + 3_000;
      while (pids.some(alive) && Date.now() < gone) await sleep(20);
      assert.deepEqual(pids.filter(alive), [], 'no process of the handler is left');
      const [event] = (await ra.page({ after: 0 })).events;
      assert.equal(event?.acknowledged_at ?? null, null, 'the interrupted event is not acknowledged: it is handed over again next time');
    });
  }

  it('TypeScript consume() with a named consumer: a handler that throws is retried in order; a new run resumes after what was handled', async () => {
    const ra = await ReturnAddress.create({ url: svc.baseUrl });
    for (const i of range(1, 8)) await ra.deliver({ type: i % 2 ? 'odd' : 'even', data: { i } });
    const seen: number[] = [];
    let failed = false;
    const stop = new AbortController();
    await ra
      .consume(
        async (e) => {
          if (e.sequence === 4 && !failed) {
            failed = true;
            throw new Error('once');
          }
          seen.push(e.sequence);
          if (e.sequence === 6) stop.abort();
        },
        { consumer: 'ts-worker', type: 'even', retryDelayMs: 50, signal: stop.signal, idleSeconds: 1 },
      )
      .catch((err: unknown) => {
        if (!stop.signal.aborted) throw err;
      });
    assert.deepEqual(seen, [2, 4, 6]);
    // Sequence 6 was handled but not confirmed (the run stopped before asking for the next page): it comes again.
    const again: number[] = [];
    await ra.consume(
      (e) => {
        again.push(e.sequence);
      },
      { consumer: 'ts-worker', type: 'even', idleSeconds: 1 },
    );
    assert.deepEqual(again, [6, 8]);
    const list = await fetch(`${svc.baseUrl}/api/v1/addresses/${ra.id}/consumers`, { headers: { authorization: `Bearer ${ra.token}` } }).then(
      (r) => r.json() as Promise<{ consumers: { name: string; cursor: number }[] }>,
    );
    assert.deepEqual(
      list.consumers.map((c: { name: string; cursor: number }) => [c.name, c.cursor]),
      [['ts-worker', 8]],
    );
  });
});
