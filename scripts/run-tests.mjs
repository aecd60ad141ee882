#!/usr/bin/env node
// Runs the compiled test suite once per store (STORE=sqlite, then STORE=postgres), with Node's
// test runner. `--stress` runs the slow adversarial tests under test/stress instead.
//   STORES=sqlite npm test     # one store only
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
const stores = (process.env.STORES ?? 'sqlite,postgres').split(',').map((s) => s.trim()).filter(Boolean);
let failed = false;
for (const store of stores) {
  console.log(`\n# ===== STORE=${store}: ${files.length} test files =====`);
  const r = spawnSync(process.execPath, ['--test', '--test-reporter=spec', '--test-concurrency=2', ...files], {
    stdio: 'inherit',
    env: { ...process.env, STORE: store },
  });
  if (r.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
