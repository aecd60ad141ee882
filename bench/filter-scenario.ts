// The filtered-read row (design.md, "Reading without loss"): what one GET …/events with a filter costs when it must
// examine 10,000 events that do not match (the scan's bound, SCAN_EVENTS), on each store. The
// filter (a type and a JSON path) is evaluated by the database; the answer is an empty page whose
// next_cursor is the last event examined.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Child } from './processes.js';
import type { Row } from './report.js';

const EVENTS = 10_000;
const READS = 30;

interface Deps {
  startService(dataDir: string, extra?: Record<string, string>, nodeArgs?: string[]): Promise<Child>;
  pgAdminUrl: string;
  log(s: string): void;
}

async function json(url: string, init: RequestInit = {}): Promise<{ status: number; body: any }> {
  const r = await fetch(url, init);
  return { status: r.status, body: await r.json() };
}

/** Seeds 10,000 non-matching events and times READS filtered reads over them: [p50, p95, max] ms. */
async function measure(service: Child): Promise<number[]> {
  const created = await json(`${service.url}/api/v1/addresses`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
  const { inbox_url: inbox, events_url: events } = created.body.endpoints;
  const auth = { authorization: `Bearer ${created.body.credentials.read_token}` };
  for (let i = 0; i < EVENTS; i += 200) {
    await Promise.all(
      Array.from({ length: 200 }, (_, j) =>
        fetch(inbox, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'stripe.charge.succeeded', data: { id: `ch_${i + j}`, amount: 4200, livemode: false, customer: { email: 'a@b.c' } } }),
        }).then((r) => r.arrayBuffer()),
      ),
    );
  }
  // The type passes every event, so the JSON condition is evaluated on all 10,000 (the costly case).
  const url = `${events}?type=stripe.*&match=data.livemode=true&limit=50`;
  const times: number[] = [];
  for (let i = 0; i < READS + 3; i++) {
    const t0 = performance.now();
    const r = await json(url, { headers: auth });
    const ms = performance.now() - t0;
    if (r.status !== 200 || r.body.events.length !== 0 || r.body.next_cursor !== EVENTS || r.body.has_more) {
      throw new Error(`filtered read answered ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
    }
    if (i >= 3) times.push(ms); // the first reads warm the caches and prepare the statement
  }
  times.sort((a, b) => a - b);
  return [times[Math.floor(READS / 2)]!, times[Math.floor(READS * 0.95)]!, times.at(-1)!];
}

function row(key: string, label: string, [p50, p95, max]: number[]): Row {
  return {
    key,
    label,
    unit: 'ms',
    service: p50,
    target: 'reported',
    met: true,
    note:
      `p95 ${p95!.toFixed(1)} ms, max ${max!.toFixed(1)} ms over ${READS} reads; one request examines ${EVENTS.toLocaleString('en-US')} events ` +
      '(type=stripe.* matching all, match=data.livemode=true none, so the JSON is read for every event), answered empty with next_cursor = the last event examined',
  };
}

export async function filteredReadRows(deps: Deps): Promise<Row[]> {
  const rows: Row[] = [];
  const dir = mkdtempSync(join(os.tmpdir(), 'ra-bench-filter-'));
  deps.log('Filtered read over 10,000 non-matching events: SQLite');
  const sqlite = await deps.startService(dir);
  try {
    rows.push(row('filter_sqlite', 'Filtered read, 10,000 non-matching events, SQLite', await measure(sqlite)));
  } finally {
    await sqlite.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  deps.log('Filtered read over 10,000 non-matching events: PostgreSQL');
  const name = `ra_bench_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: deps.pgAdminUrl });
  try {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
  } catch (err) {
    await admin.end().catch(() => {});
    rows.push({
      key: 'filter_pg',
      label: 'Filtered read, 10,000 non-matching events, PostgreSQL',
      unit: 'ms',
      target: 'reported',
      met: null,
      note: `skipped: ${(err as Error).message}`,
    });
    return rows;
  }
  const dbUrl = new URL(deps.pgAdminUrl);
  dbUrl.pathname = `/${name}`;
  const pgDir = mkdtempSync(join(os.tmpdir(), 'ra-bench-filter-'));
  try {
    const service = await deps.startService(pgDir, { DATABASE_URL: dbUrl.toString() }, []);
    try {
      rows.push(row('filter_pg', 'Filtered read, 10,000 non-matching events, PostgreSQL', await measure(service)));
    } finally {
      await service.stop();
    }
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    await admin.end().catch(() => {});
    rmSync(pgDir, { recursive: true, force: true });
  }
  return rows;
}
