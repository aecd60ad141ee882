#!/usr/bin/env node
// Runs the compiled test suite once per store (STORE=sqlite and STORE=postgres, at once), with Node's
// test runner, one `node --test` per file and store. `--stress` runs the slow adversarial tests under
// test/stress instead. Other arguments keep only the files whose path contains one of them.
//   STORES=sqlite npm test            # one store only
//   STORES_IN_PARALLEL=0 npm test     # one store after the other
//   npm test -- email/ client/cli     # some files only
// Each file's output is printed, whole, when it ends; the summary lists each store's slowest files.
// Node's own summary does not count a skipped describe() (nor the tests inside it), so a whole
// suite skipped for want of Chromium would vanish from it: a TAP copy of each run is read back and
// every skip, suite or test, is listed with its reason in the summary at the end.
// A hung test must fail with its name, not stall CI: every test has a default timeout (tests that
// need longer say so in their options), and the whole run is bounded too.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const stress = process.argv.includes('--stress');
const root = 'dist/test';

function find(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? find(p) : p.endsWith('.test.js') ? [p] : [];
  });
}

const only = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const files = find(root)
  .filter((f) => f.includes(`${join(root, 'stress')}/`) === stress)
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();
if (files.length === 0) {
  console.error(`no test files found under ${root}${stress ? '/stress' : ''}`);
  process.exit(1);
}
// Bounds for a hang, not speed claims. `node --test` applies --test-timeout to the whole file as
// well as to each test in it, so this bounds a file's total time: on a busy machine (load average
// ~20 on 2 cores) cli.test and smtp-listener took over the former 120 s and failed whole while
// every test in them passed. The run's bound leaves room for the suite under a CPU hog.
// A stress file gets twice that: the 10,000-waiter proxy test sets up on PostgreSQL (a query per
// long-poll's token and read, 200 re-asks a second once the first 25 s waits end) beside the
// other store's stress run, and once took over 220 s there.
const TEST_TIMEOUT_MS = stress ? 600_000 : 300_000;
const RUN_TIMEOUT_MS = 40 * 60_000;
// Files run at once per store (TEST_CONCURRENCY × stores in all). Most of a test's time is spent
// waiting (long-polls, timeouts, child processes), not computing, so the runs overlap on 2 cores.
// The stress files are the exception: each one saturates the service on purpose and asserts its
// liveness (/healthz within 1 s) beside the attack, so two of them sharing the 2 cores measure each
// other instead (CI once saw 1,025 ms with four at once): one per store at a time.
const CONCURRENCY = Number(process.env.TEST_CONCURRENCY ?? (stress ? 1 : 2));
const stores = (process.env.STORES ?? 'sqlite,postgres')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);
// STORES_IN_PARALLEL=0 runs the stores one after the other.
const parallel = process.env.STORES_IN_PARALLEL !== '0' && stores.length > 1;
const tapDir = mkdtempSync(join(tmpdir(), 'return-address-tests-'));

/** Node's counts (the last top-level `# name N` lines) and every `# SKIP` line, a test or a whole suite, with its parent. */
function summarize(tap) {
  const counts = {};
  const skips = [];
  let parent = '';
  const lines = tap.split('\n');
  lines.forEach((line, i) => {
    const top = /^# Subtest: (.*)$/.exec(line);
    if (top) parent = top[1];
    const count = /^# (tests|suites|pass|fail|cancelled|skipped|todo) (\d+)$/.exec(line);
    if (count) counts[count[1]] = Number(count[2]);
    const skip = /^(\s*)ok \d+ - (.*?) # SKIP ?(.*)$/.exec(line);
    if (!skip) return;
    const suite = lines.slice(i + 1, i + 5).some((l) => /^\s*type: 'suite'$/.test(l));
    skips.push({ kind: suite ? 'suite' : 'test', name: skip[1] === '' ? skip[2] : `${parent} > ${skip[2]}`, reason: skip[3] || 'no reason given' });
  });
  return { counts, skips };
}

/** Prints a finished file's output under a header; Node's per-run totals (`ℹ tests 5` …) are left out, the summary has them per store. */
function printJob(job, code, seconds) {
  const lines = Buffer.concat(job.out)
    .toString('utf8')
    .split('\n')
    .filter((l) => !/^ℹ (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) [\d.]+$/.test(l));
  console.log(`\n# ===== STORE=${job.store} ${job.file}: ${code === 0 ? 'passed' : 'FAILED'} in ${seconds} s =====`);
  process.stdout.write(`${lines.join('\n').trimEnd()}\n`);
}

/** One file under one store: `node --test` on that file alone (its own process, as before), output kept until it ends. */
function runJob(job) {
  return new Promise((resolve) => {
    const started = Date.now();
    const reporters = ['--test-reporter=spec', '--test-reporter-destination=stdout', '--test-reporter=tap', `--test-reporter-destination=${job.tapFile}`];
    const child = spawn(process.execPath, ['--test', ...reporters, `--test-timeout=${TEST_TIMEOUT_MS}`, job.file], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, STORE: job.store },
    });
    running.add(child);
    child.stdout.on('data', (c) => job.out.push(c));
    child.stderr.on('data', (c) => job.out.push(c));
    child.on('close', (code) => {
      running.delete(child);
      job.ms = Date.now() - started;
      job.ok = code === 0;
      printJob(job, code, (job.ms / 1000).toFixed(1));
      resolve();
    });
  });
}

// Longest first: a long file started last would run on alone at the end while the other slots sit idle.
// The order is from a measured run (`npm test` prints the slowest files of each store at the end);
// a file missing from it runs after these, in name order, and a name here that no longer exists is ignored.
const SLOW_FIRST = [
  'claims/claim-workers',
  'client/python',
  'client/cli',
  'email/smtp-listener',
  'claims/claim-clients',
  'approvals/approvals',
  'client/client-package',
  'email/sender-authentication',
  'http/honest-status',
  'mcp/mcp-progress',
  'email/smtp-tls-reload',
  'client/consume',
  'forward/forward',
  'email/untrusted-mail',
  'http/queue-concurrency',
  'http/filtered-reads',
  'email/mail-parse-pool',
  'claims/consume-claim',
  'approvals/ask-cli',
  'operations/retention',
];
const rank = (f) => {
  const i = SLOW_FIRST.indexOf(f.slice(root.length + 1, -'.test.js'.length));
  return i === -1 ? SLOW_FIRST.length : i;
};
const ordered = [...files].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
// Every store's files in one queue, the stores taking turns: when one store's files are done the
// other's still fill every slot, so neither store's slowest file ends the run on a half-idle machine.
// STORES_IN_PARALLEL=0 runs one store's whole queue before the next.
const jobs = parallel
  ? ordered.flatMap((file) => stores.map((store) => ({ store, file })))
  : stores.flatMap((store) => ordered.map((file) => ({ store, file })));
for (const [i, job] of jobs.entries()) Object.assign(job, { out: [], tapFile: join(tapDir, `${i}.tap`), ok: false, ms: 0 });
const slots = CONCURRENCY * (parallel ? stores.length : 1);
const running = new Set();
const startedAt = Date.now();
let timedOut = false;
const runTimer = setTimeout(() => {
  timedOut = true;
  console.log(`# the test run did not finish within ${RUN_TIMEOUT_MS / 60_000} min`);
  for (const child of running) child.kill('SIGKILL');
}, RUN_TIMEOUT_MS);
console.log(`# ${files.length} test files × ${stores.length} store(s) (${stores.join(', ')}), ${slots} at once`);
/** Runs `queue` with `slots` jobs at once. */
async function pool(queue) {
  let next = 0;
  await Promise.all(
    Array.from({ length: slots }, async () => {
      while (next < queue.length && !timedOut) await runJob(queue[next++]);
    }),
  );
}
if (parallel) await pool(jobs);
else for (const store of stores) await pool(jobs.filter((j) => j.store === store));
clearTimeout(runTimer);

const results = stores.map((store) => {
  const mine = jobs.filter((j) => j.store === store);
  const counts = {};
  const skips = [];
  for (const job of mine) {
    let tap = '';
    try {
      tap = readFileSync(job.tapFile, 'utf8');
    } catch {
      // The run died (or never started) before writing it: counted as failed below.
    }
    const one = summarize(tap);
    for (const [k, v] of Object.entries(one.counts)) counts[k] = (counts[k] ?? 0) + v;
    skips.push(...one.skips);
  }
  const failed = mine.filter((j) => !j.ok).map((j) => j.file);
  const slowest = [...mine].sort((a, b) => b.ms - a.ms).slice(0, 15);
  return { store, ok: failed.length === 0, counts, skips, failed, slowest };
});
rmSync(tapDir, { recursive: true, force: true });
console.log(`\n# all stores done in ${((Date.now() - startedAt) / 1000).toFixed(1)} s wall`);

console.log('\n# ===== summary =====');
for (const { store, ok, counts, skips, failed, slowest } of results) {
  const c = (k) => counts[k] ?? '?';
  console.log(
    `# STORE=${store}: ${ok ? 'passed' : 'FAILED'}; ${c('tests')} tests, ${c('pass')} pass, ${c('fail')} fail, ${c('cancelled')} cancelled; ` +
      `${skips.filter((s) => s.kind === 'test').length} tests and ${skips.filter((s) => s.kind === 'suite').length} whole suites skipped ` +
      `(node's "skipped ${c('skipped')}" counts no skipped suite, nor the tests in one)`,
  );
  for (const s of skips) console.log(`#   skipped ${s.kind}: ${s.name}: ${s.reason}`);
  for (const f of failed) console.log(`#   FAILED file: ${f}`);
  console.log(`#   slowest files: ${slowest.map((j) => `${j.file.slice(root.length + 1)} ${(j.ms / 1000).toFixed(1)} s`).join(', ')}`);
}
process.exit(results.every((r) => r.ok) ? 0 : 1);
