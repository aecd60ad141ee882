// Retention under load, since deletes must not hold deliveries up: deliveries' latency while the sweeper deletes 100,000
// acknowledged events past RETAIN_ACKED_SECONDS, against the same deliveries before it starts.
//
// The events are written straight into the store before the service starts (100 addresses x 1,000
// events, all acknowledged at one instant, counters set to match), so the service's first sweeps find
// nothing and the deletion begins, by the clock, RETAIN seconds after that instant: the baseline is
// measured before, the deletion window from the first row gone to the last. Deliveries run closed-loop
// on 16 keep-alive connections to the same addresses the sweeper deletes from; the baseline leaves out
// the first WARM_UP_MS after start.

import http from 'node:http';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { newEventId } from '../src/domain/credentials.js';
import { SQLITE_FILE } from '../src/storage/open-store.js';
import { percentile, request } from './http-client.js';
import { type Child, sleep } from './processes.js';
import type { Row } from './report.js';

export const RETENTION_EVENTS = 100_000;
const ADDRESSES = 100;
const RETAIN_SECONDS = 25;
/** Deliveries in the first seconds after start warm the service up (JIT, connections): not the baseline. */
const WARM_UP_MS = 3000;
const CONNECTIONS = 16;

interface Target {
  /** Inserts `perAddress` acknowledged events into each address, acknowledged at `ackedAt`. */
  fill(ids: string[], perAddress: number, ackedAt: number): Promise<void>;
  /** Acknowledged events left. */
  acked(): Promise<number>;
  /** Bytes the store takes on disk (SQLite file + WAL; PostgreSQL's events table and indexes). */
  size(): Promise<number>;
  close(): Promise<void>;
}

const DATA = JSON.stringify({
  id: 'pi_3NbT2x',
  amount: 4200,
  currency: 'eur',
  customer: { id: 'cus_9s6XKzkNRiz8i3', email: 'agent@example.com' },
  note: 'x'.repeat(150),
});

function rows(ids: string[], perAddress: number, ackedAt: number) {
  const out: [string, number, string, number][] = [];
  for (const id of ids) for (let s = 1; s <= perAddress; s++) out.push([id, s, newEventId(ackedAt - 1000), ackedAt]);
  return out;
}

export function sqliteTarget(dataDir: string): Target {
  const path = join(dataDir, SQLITE_FILE);
  // Opened once the service has created and migrated the file (its auto_vacuum is set at creation).
  let opened: Database.Database | undefined;
  const open = () => {
    opened ??= new Database(path, { fileMustExist: true });
    opened.pragma('busy_timeout = 5000');
    return opened;
  };
  const fs = import('node:fs');
  return {
    async fill(ids, perAddress, ackedAt) {
      const db = open();
      const insert = db.prepare(`INSERT INTO events (id, address_id, sequence, type, source, data, metadata, dedupe_key, created_at, acknowledged_at)
        VALUES (?, ?, ?, 'payment.succeeded', 'bench', ?, NULL, NULL, ?, ?)`);
      const counters = db.prepare('UPDATE addresses SET last_sequence = ?, event_count = ?, event_bytes = ? WHERE id = ?');
      db.transaction(() => {
        for (const [address, seq, id, at] of rows(ids, perAddress, ackedAt)) insert.run(id, address, seq, DATA, at - 1000, at);
        for (const id of ids) counters.run(perAddress, perAddress, perAddress * Buffer.byteLength(DATA), id);
      })();
      db.pragma('wal_checkpoint(TRUNCATE)');
    },
    async acked() {
      return open().prepare('SELECT count(*) FROM events WHERE acknowledged_at IS NOT NULL').pluck().get() as number;
    },
    async size() {
      const { statSync, existsSync } = await fs;
      return statSync(path).size + (existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0);
    },
    async close() {
      opened?.close();
    },
  };
}

export async function postgresTarget(url: string): Promise<Target> {
  const c = new pg.Client({ connectionString: url });
  c.on('error', () => {}); // the database is dropped after the scenario, with this client perhaps still open
  await c.connect();
  return {
    async fill(ids, perAddress, ackedAt) {
      const all = rows(ids, perAddress, ackedAt);
      for (let i = 0; i < all.length; i += 10_000) {
        const part = all.slice(i, i + 10_000);
        await c.query(
          `INSERT INTO events (id, address_id, sequence, type, source, data, metadata, dedupe_key, created_at, acknowledged_at)
          SELECT id, a, s, 'payment.succeeded', 'bench', $4, NULL, NULL, $5::bigint - 1000, $5::bigint FROM unnest($1::text[], $2::text[], $3::bigint[]) AS u(a, id, s)`,
          [part.map((r) => r[0]), part.map((r) => r[2]), part.map((r) => r[1]), DATA, ackedAt],
        );
      }
      await c.query('UPDATE addresses SET last_sequence = $1::bigint, event_count = $1::integer, event_bytes = $2::bigint WHERE id = ANY($3)', [
        perAddress,
        perAddress * Buffer.byteLength(DATA),
        ids,
      ]);
      await c.query('VACUUM ANALYZE events');
    },
    async acked() {
      return Number((await c.query('SELECT count(*) AS n FROM events WHERE acknowledged_at IS NOT NULL')).rows[0].n);
    },
    async size() {
      return Number((await c.query("SELECT pg_total_relation_size('events') AS n")).rows[0].n);
    },
    async close() {
      await c.end();
    },
  };
}

interface Sample {
  at: number;
  ms: number;
  ok: boolean;
}

/**
 * `start(extraEnv)` starts the service on the store `target` writes to; `addresses` creates
 * addresses through it and returns their ids and inbox paths.
 */
export async function retentionScenario(
  label: string,
  key: string,
  target: Target,
  start: (env: Record<string, string>) => Promise<Child>,
  addresses: (service: Child, n: number) => Promise<{ id: string; inboxPath: string }[]>,
  log: (s: string) => void,
): Promise<Row> {
  // First start: migrate and create the addresses; stop; fill the store while nothing runs.
  let service = await start({});
  const addrs = await addresses(service, ADDRESSES);
  await service.stop();
  const ackedAt = Date.now();
  await target.fill(
    addrs.map((a) => a.id),
    RETENTION_EVENTS / ADDRESSES,
    ackedAt,
  );
  const sizeBefore = await target.size();
  log(
    `${label}: ${RETENTION_EVENTS.toLocaleString('en-US')} acknowledged events written (${(sizeBefore / 2 ** 20).toFixed(1)} MiB); deletion due ${RETAIN_SECONDS} s after their ack`,
  );
  service = await start({ RETAIN_ACKED_SECONDS: String(RETAIN_SECONDS), SWEEP_INTERVAL_SECONDS: '1' });
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const samples: Sample[] = [];
  let running = true;
  let n = 0;
  const loop = async () => {
    while (running) {
      const a = addrs[n++ % addrs.length]!;
      const r = await request(agent, new URL(service.url + a.inboxPath), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: `{"data":${DATA}}`,
      });
      samples.push({ at: r.startAt, ms: r.endAt - r.startAt, ok: r.status === 202 });
    }
  };
  const loops = Array.from({ length: CONNECTIONS }, loop);
  const measuredFrom = performance.now() + WARM_UP_MS;
  // Watch the acknowledged events go, from a connection of our own.
  let firstGone: number | undefined;
  let allGone: number | undefined;
  const deadline = Date.now() + 180_000;
  while (allGone === undefined && Date.now() < deadline) {
    const left = await target.acked();
    const at = performance.now();
    if (firstGone === undefined && left < RETENTION_EVENTS) firstGone = at;
    if (left === 0) allGone = at;
    await sleep(20);
  }
  await sleep(1000); // and a second after, for the space reclaimed behind the deletion
  running = false;
  await Promise.all(loops);
  agent.destroy();
  await service.stop();
  const sizeAfter = await target.size();
  await target.close();
  if (firstGone === undefined || allGone === undefined) throw new Error(`${label}: the acknowledged events were not deleted within 180 s`);
  const during = samples
    .filter((s) => s.at >= firstGone! && s.at <= allGone!)
    .map((s) => s.ms)
    .sort((x, y) => x - y);
  const baseline = samples
    .filter((s) => s.at >= measuredFrom && s.at < firstGone! - 200)
    .map((s) => s.ms)
    .sort((x, y) => x - y);
  const errors = samples.filter((s) => !s.ok).length;
  const p = (xs: number[], q: number) => Number(percentile(xs, q).toFixed(2));
  const seconds = (allGone - firstGone) / 1000;
  const note =
    `deleted in ${seconds.toFixed(2)} s (${Math.round(RETENTION_EVENTS / seconds).toLocaleString('en-US')} events/s); ` +
    `during: ${during.length} deliveries, p50 ${p(during, 50)} ms, p99 ${p(during, 99)} ms, max ${p(during, 100)} ms; ` +
    `before: ${baseline.length} deliveries, p50 ${p(baseline, 50)} ms, p99 ${p(baseline, 99)} ms; ${errors} errors; ` +
    `store ${(sizeBefore / 2 ** 20).toFixed(1)} MiB -> ${(sizeAfter / 2 ** 20).toFixed(1)} MiB`;
  log(`  ${note}`);
  return { key, label, unit: 'ms', service: p(during, 99), target: 'reported', met: errors === 0, note };
}
