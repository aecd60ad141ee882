#!/usr/bin/env node
// Runs the compiled test suite once per store (STORE=sqlite, then STORE=postgres), with Node's
// test runner. `--stress` runs the slow adversarial tests under test/stress instead.
//   STORES=sqlite npm test     # one store only
// Node's own summary does not count a skipped describe() (nor the tests inside it), so a whole
// suite skipped for want of Chromium would vanish from it: a TAP copy of each run is read back and
// every skip, suite or test, is listed with its reason in the summary at the end.
// A hung test must fail with its name, not stall CI: every test has a default timeout (tests that
// need longer say so in their options), and each store's whole run is bounded too.
import { spawnSync } from 'node:child_process';
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

const files = find(root).filter((f) => f.includes(`${join(root, 'stress')}/`) === stress).sort();
if (files.length === 0) {
  console.error(`no test files found under ${root}${stress ? '/stress' : ''}`);
  process.exit(1);
}
const TEST_TIMEOUT_MS = 120_000;
const RUN_TIMEOUT_MS = 15 * 60_000;
const stores = (process.env.STORES ?? 'sqlite,postgres').split(',').map((s) => s.trim()).filter(Boolean);
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

const summaries = [];
let failed = false;
for (const store of stores) {
  console.log(`\n# ===== STORE=${store}: ${files.length} test files =====`);
  const tapFile = join(tapDir, `${store}.tap`);
  const reporters = ['--test-reporter=spec', '--test-reporter-destination=stdout', '--test-reporter=tap', `--test-reporter-destination=${tapFile}`];
  const r = spawnSync(process.execPath, ['--test', ...reporters, '--test-concurrency=2', `--test-timeout=${TEST_TIMEOUT_MS}`, ...files], {
    stdio: 'inherit',
    env: { ...process.env, STORE: store },
    timeout: RUN_TIMEOUT_MS,
    killSignal: 'SIGKILL',
  });
  if (r.error) console.error(`# STORE=${store}: the test run did not finish within ${RUN_TIMEOUT_MS / 60_000} min (${r.error.message})`);
  if (r.status !== 0) failed = true;
  let tap = '';
  try { tap = readFileSync(tapFile, 'utf8'); } catch { /* the run died before writing it: reported above */ }
  summaries.push({ store, status: r.status, ...summarize(tap) });
}
rmSync(tapDir, { recursive: true, force: true });

console.log('\n# ===== summary =====');
for (const { store, status, counts, skips } of summaries) {
  const c = (k) => counts[k] ?? '?';
  console.log(`# STORE=${store}: ${status === 0 ? 'passed' : 'FAILED'}; ${c('tests')} tests, ${c('pass')} pass, ${c('fail')} fail, ${c('cancelled')} cancelled; ${skips.filter((s) => s.kind === 'test').length} tests and ${skips.filter((s) => s.kind === 'suite').length} whole suites skipped (node's "skipped ${c('skipped')}" counts no skipped suite, nor the tests in one)`);
  for (const s of skips) console.log(`#   skipped ${s.kind}: ${s.name}: ${s.reason}`);
}
process.exit(failed ? 1 : 0);
