#!/usr/bin/env node
// Runs the compiled test suite once per store (STORE=sqlite and STORE=postgres, at once), with Node's
// test runner. `--stress` runs the slow adversarial tests under test/stress instead.
//   STORES=sqlite npm test            # one store only
//   STORES_IN_PARALLEL=0 npm test     # one store after the other, output streamed
// Node's own summary does not count a skipped describe() (nor the tests inside it), so a whole
// suite skipped for want of Chromium would vanish from it: a TAP copy of each run is read back and
// every skip, suite or test, is listed with its reason in the summary at the end.
// A hung test must fail with its name, not stall CI: every test has a default timeout (tests that
// need longer say so in their options), and each store's whole run is bounded too.
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

const files = find(root)
  .filter((f) => f.includes(`${join(root, 'stress')}/`) === stress)
  .sort();
if (files.length === 0) {
  console.error(`no test files found under ${root}${stress ? '/stress' : ''}`);
  process.exit(1);
}
const TEST_TIMEOUT_MS = 120_000;
const RUN_TIMEOUT_MS = 15 * 60_000;
// Files run at once per store. Most of a test's time is spent waiting (long-polls, timeouts, child
// processes), not computing, so a store's run and the two stores' runs overlap on 2 cores.
const CONCURRENCY = Number(process.env.TEST_CONCURRENCY ?? 2);
const stores = (process.env.STORES ?? 'sqlite,postgres')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);
// STORES_IN_PARALLEL=0 runs the stores one after the other, streaming the output as it comes.
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

/** One store's run; its output is streamed when it runs alone and printed whole when stores overlap. */
function runStore(store) {
  return new Promise((resolve) => {
    const started = Date.now();
    const out = [];
    const tapFile = join(tapDir, `${store}.tap`);
    const reporters = ['--test-reporter=spec', '--test-reporter-destination=stdout', '--test-reporter=tap', `--test-reporter-destination=${tapFile}`];
    const child = spawn(process.execPath, ['--test', ...reporters, `--test-concurrency=${CONCURRENCY}`, `--test-timeout=${TEST_TIMEOUT_MS}`, ...files], {
      stdio: parallel ? ['ignore', 'pipe', 'pipe'] : 'inherit',
      env: { ...process.env, STORE: store },
    });
    if (parallel) {
      child.stdout.on('data', (c) => out.push(c));
      child.stderr.on('data', (c) => out.push(c));
    } else {
      console.log(`\n# ===== STORE=${store}: ${files.length} test files =====`);
    }
    const timer = setTimeout(() => {
      out.push(Buffer.from(`# STORE=${store}: the test run did not finish within ${RUN_TIMEOUT_MS / 60_000} min\n`));
      child.kill('SIGKILL');
    }, RUN_TIMEOUT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (parallel) {
        console.log(`\n# ===== STORE=${store}: ${files.length} test files =====`);
        process.stdout.write(Buffer.concat(out));
      }
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      console.log(`# STORE=${store}: ${code === 0 ? 'passed' : 'FAILED'} in ${seconds} s wall`);
      let tap = '';
      try {
        tap = readFileSync(tapFile, 'utf8');
      } catch {
        // The run died before writing it: reported above.
      }
      resolve({ store, ok: code === 0, ...summarize(tap) });
    });
  });
}

const results = [];
if (parallel) {
  results.push(...(await Promise.all(stores.map(runStore))));
} else {
  for (const store of stores) results.push(await runStore(store));
}
rmSync(tapDir, { recursive: true, force: true });

console.log('\n# ===== summary =====');
for (const { store, ok, counts, skips } of results) {
  const c = (k) => counts[k] ?? '?';
  console.log(
    `# STORE=${store}: ${ok ? 'passed' : 'FAILED'}; ${c('tests')} tests, ${c('pass')} pass, ${c('fail')} fail, ${c('cancelled')} cancelled; ` +
      `${skips.filter((s) => s.kind === 'test').length} tests and ${skips.filter((s) => s.kind === 'suite').length} whole suites skipped ` +
      `(node's "skipped ${c('skipped')}" counts no skipped suite, nor the tests in one)`,
  );
  for (const s of skips) console.log(`#   skipped ${s.kind}: ${s.name}: ${s.reason}`);
}
process.exit(results.every((r) => r.ok) ? 0 : 1);
