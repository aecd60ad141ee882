#!/usr/bin/env node
// Runs the compiled test suite once per store (STORE=sqlite and STORE=postgres, at once), with Node's
// test runner. `--stress` runs the slow adversarial tests under test/stress instead.
//   STORES=sqlite npm test     # one store only
//   STORES_IN_PARALLEL=0 npm test   # one store after the other, output streamed
// A hung test must fail with its name, not stall CI: every test has a default timeout (tests that
// need longer say so in their options), and each store's whole run is bounded too.
import { spawn } from 'node:child_process';
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
// Files run at once per store. Most of a test's time is spent waiting (long-polls, timeouts, child
// processes), not computing, so a store's run and the two stores' runs overlap on 2 cores.
const CONCURRENCY = Number(process.env.TEST_CONCURRENCY ?? 2);
const stores = (process.env.STORES ?? 'sqlite,postgres').split(',').map((s) => s.trim()).filter(Boolean);
// STORES_IN_PARALLEL=0 runs the stores one after the other, streaming the output as it comes.
const parallel = process.env.STORES_IN_PARALLEL !== '0' && stores.length > 1;

/** One store's run; its output is streamed when it runs alone and printed whole when stores overlap. */
function runStore(store) {
  return new Promise((resolve) => {
    const started = Date.now();
    const out = [];
    const child = spawn(process.execPath, ['--test', '--test-reporter=spec', `--test-concurrency=${CONCURRENCY}`, `--test-timeout=${TEST_TIMEOUT_MS}`, ...files], {
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
      resolve(code === 0);
    });
  });
}

let results;
if (parallel) {
  results = await Promise.all(stores.map(runStore));
} else {
  results = [];
  for (const store of stores) results.push(await runStore(store));
}
process.exit(results.every(Boolean) ? 0 : 1);
