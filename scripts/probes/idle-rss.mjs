#!/usr/bin/env node
import { spawn } from 'node:child_process';
// The resident memory of an idle service (built: npm run build), one second after /readyz answers:
// what every idle long-poll figure of the bench sits on. Usage: node scripts/probes/idle-rss.mjs
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dataDir = mkdtempSync(join(tmpdir(), 'ra-rss-'));
const p = spawn(process.execPath, ['--max-semi-space-size=8', join(process.cwd(), 'dist/src/server.js')], {
  env: {
    ...process.env,
    PORT: process.env.PORT ?? '3993',
    SMTP_PORT: process.env.SMTP_PORT ?? '2593',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
  },
  stdio: 'ignore',
});
for (let i = 0; i < 100; i++) {
  try {
    const r = await fetch(`http://127.0.0.1:${process.env.PORT ?? '3993'}/readyz`);
    if (r.ok) break;
  } catch {}
  await new Promise((r) => setTimeout(r, 100));
}
await new Promise((r) => setTimeout(r, 1000));
const rss = readFileSync(`/proc/${p.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1];
console.log('idle service RSS', (rss / 1024).toFixed(1), 'MB');
p.kill('SIGTERM');
await new Promise((r) => p.once('exit', r));
rmSync(dataDir, { recursive: true, force: true });
