#!/usr/bin/env node
// Runs the compiled test suite once per store (STORE=sqlite, then STORE=postgres), with Node's
// test runner. `--stress` runs the slow adversarial tests under test/stress instead.
//   STORES=sqlite npm test     # one store only
// A hung test must fail with its name, not stall CI: every test has a default timeout (tests that
// need longer say so in their options), and each store's whole run is bounded too.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
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
let failed = false;
for (const store of stores) {
  console.log(`\n# ===== STORE=${store}: ${files.length} test files =====`);
  const r = spawnSync(process.execPath, ['--test', '--test-reporter=spec', '--test-concurrency=2', `--test-timeout=${TEST_TIMEOUT_MS}`, ...files], {
    stdio: 'inherit',
    env: { ...process.env, STORE: store },
    timeout: RUN_TIMEOUT_MS,
    killSignal: 'SIGKILL',
  });
  if (r.error) console.error(`# STORE=${store}: the test run did not finish within ${RUN_TIMEOUT_MS / 60_000} min (${r.error.message})`);
  if (r.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
