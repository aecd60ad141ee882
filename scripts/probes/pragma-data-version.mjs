#!/usr/bin/env node
// The cost of one `PRAGMA data_version` read, which the SQLite read cache makes on every lookup to see
// another process's commits (src/storage/sqlite/sqlite-read-cache.ts). Five rounds of 200,000 reads
// on a WAL database in a temporary directory. Usage: node scripts/probes/pragma-data-version.mjs
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

const dir = mkdtempSync(join(tmpdir(), 'ra-pragma-'));
try {
  const db = new Database(join(dir, 'probe.db'));
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE t (x)');
  const read = db.prepare('PRAGMA data_version').pluck();
  const n = 200_000;
  for (let round = 1; round <= 5; round++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) read.get();
    const us = Number(process.hrtime.bigint() - t0) / n / 1000;
    console.log(`round ${round}: ${us.toFixed(2)} µs per PRAGMA data_version read`);
  }
  db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
