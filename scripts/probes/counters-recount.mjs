#!/usr/bin/env node
// Probe: the cost of recounting an address's queue counters after a crash. Run after a build:
//   node scripts/probes/counters-recount.mjs 10000
// How long the first append to an address takes after a crash left N events above its row's last_sequence.
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { newEventId } from '../../dist/src/domain/credentials.js';
import { SqliteStore } from '../../dist/src/storage/sqlite/sqlite-store.js';

const dir = mkdtempSync(join(os.tmpdir(), 'recount-'));
const path = join(dir, 'x.db');
const s1 = new SqliteStore(path);
const a = {
  id: `addr_${'a'.repeat(26)}`,
  slug: 'aaaaaaaaaaaa',
  name: 'n',
  taskId: null,
  readTokenHash: Buffer.alloc(32),
  inboxSecretHash: Buffer.alloc(32),
  signingKeys: null,
  createdAt: Date.now(),
  expiresAt: Date.now() + 1e9,
};
await s1.createAddress(a, { key: 'k', limit: 1e9, windowMs: 60000, now: Date.now() });
const limits = { maxEventsPerAddress: 1e9, maxBytesPerAddress: 2 ** 50 };
const ev = () => ({
  id: newEventId(),
  addressId: a.id,
  type: 't',
  source: 's',
  data: JSON.stringify({ x: 'y'.repeat(200) }),
  metadata: null,
  dedupeKey: null,
  createdAt: Date.now(),
});
// Writes events straight into the table above the row's last_sequence (what a crash within the flush interval leaves, at any size).
const N = Number(process.argv[2] ?? 10000);
const raw = new Database(path);
const ins = raw.prepare(
  "INSERT INTO events (id, address_id, sequence, type, source, data, metadata, dedupe_key, created_at, acknowledged_at) VALUES (?, ?, ?, 't', 's', ?, NULL, NULL, ?, NULL)",
);
raw.transaction(() => {
  for (let i = 1; i <= N; i++) {
    const e = ev();
    ins.run(e.id, a.id, i, e.data, e.createdAt);
  }
})();
raw.close();
await s1.close();
const t0 = performance.now();
const s2 = new SqliteStore(path);
const t1 = performance.now();
const r = await s2.appendEvent(ev(), limits);
const t2 = performance.now();
const r2 = await s2.appendEvent(ev(), limits);
const t3 = performance.now();
console.log(
  `N=${N}: open ${(t1 - t0).toFixed(1)} ms; first append (recounts ${N} events) ${(t2 - t1).toFixed(2)} ms -> sequence ${r.event.sequence}; second append ${(t3 - t2).toFixed(2)} ms -> ${r2.event.sequence}`,
);
await s2.close();
