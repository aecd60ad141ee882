// The filtered-waiters row (design.md, "The wakeup hub and followers"): deliveries per second to one
// address while 1,000 long-polls with the costliest filter the budget takes wait on it, beside the
// same with none, on each store. The waiters share one read of each new event and run their
// filters in memory; a delivery's cost should not grow with them (target: within 2x of none).
// Deliveries go one at a time (closed loop), so the rate is the inverse of a delivery's latency,
// which includes screening every waiter: one shared read, each filter in memory, and no waiter
// re-registered (none matches).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Child } from './processes.js';
import type { Row } from './report.js';

const WAITERS = 1000;
const DELIVERIES = 300;
/** Conditions of 4 segments, 3 numeric: 32 JSON look-ups each, 8 of them (MAX_FILTER_COST 256); the last never holds. */
const VALUE = 'v'.repeat(100);
const FILTER = [
  ...Array.from({ length: 19 }, (_, i): [string, string] => ['type', `prefix${i}.*`]),
  ['type', 'x'] as [string, string],
  ...Array.from({ length: 7 }, (_, i): [string, string] => ['match', `data.a.0.1.${i + 1}=${VALUE}`]),
  ['match', 'data.a.0.1.8=never'] as [string, string],
];
const EVENT = JSON.stringify({
  type: 'x',
  data: { a: [[null, Object.fromEntries(Array.from({ length: 8 }, (_, i) => [String(i + 1), i === 7 ? 'no' : VALUE]))]] },
});

interface Deps {
  startService(dataDir: string, extra?: Record<string, string>, nodeArgs?: string[]): Promise<Child>;
  pgAdminUrl: string;
  log(s: string): void;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

/** The last sequence a delivery answered: the waiters start after it. */
let lastSequence = 0;

function post(url: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          text += d;
        });
        res.on('end', () => {
          const seq = Number(/"sequence":(\d+)/.exec(text)?.[1] ?? 0);
          if (seq > lastSequence) lastSequence = seq;
          resolve(res.statusCode ?? 0);
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Deliveries per second, one at a time, over DELIVERIES deliveries (after 20 to warm up). */
async function rate(inbox: string): Promise<number> {
  for (let i = 0; i < 20; i++) await post(inbox, EVENT);
  const t0 = performance.now();
  for (let i = 0; i < DELIVERIES; i++) {
    const status = await post(inbox, EVENT);
    if (status !== 202) throw new Error(`delivery answered ${status}`);
  }
  return DELIVERIES / ((performance.now() - t0) / 1000);
}

async function measure(service: Child): Promise<{ none: number; waiting: number }> {
  const created = await fetch(`${service.url}/api/v1/addresses`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
  const body = (await created.json()) as { endpoints: { inbox_url: string; events_url: string }; credentials: { read_token: string } };
  const inbox = body.endpoints.inbox_url;
  lastSequence = 0;
  const none = await rate(inbox);
  const polls: http.ClientRequest[] = [];
  const pollAgent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  const qs = new URLSearchParams([...FILTER, ['wait', '25'], ['after', String(lastSequence)]]);
  let answeredEarly = 0;
  for (let i = 0; i < WAITERS; i++) {
    const req = http.get(
      `${body.endpoints.events_url}?${qs}`,
      { agent: pollAgent, headers: { authorization: `Bearer ${body.credentials.read_token}` } },
      (res) => {
        answeredEarly++;
        res.resume();
      },
    );
    req.on('error', () => {});
    polls.push(req);
  }
  // Every poll is held once a read beside them answers (they were all written before it).
  await new Promise((r) => setTimeout(r, 2000));
  await fetch(`${body.endpoints.events_url}?limit=1`, { headers: { authorization: `Bearer ${body.credentials.read_token}` } }).then((r) => r.arrayBuffer());
  const waiting = await rate(inbox);
  for (const p of polls) p.destroy();
  pollAgent.destroy();
  if (answeredEarly > 0) throw new Error(`${answeredEarly} filtered long-polls answered before their wait ended`);
  return { none, waiting };
}

function row(key: string, label: string, r: { none: number; waiting: number }): Row {
  const ratio = r.none / r.waiting;
  return {
    key,
    label,
    unit: 'deliveries/s',
    service: r.waiting,
    target: 'within 2x of none',
    met: ratio <= 2,
    note:
      `${r.waiting.toFixed(0)}/s with ${WAITERS.toLocaleString('en-US')} filtered long-polls waiting on the address, ${r.none.toFixed(0)}/s with none ` +
      `(${ratio.toFixed(2)}x); one delivery at a time, each screened by every waiter; the filter: 20 types and 8 conditions of 3 numeric segments (cost 256)`,
  };
}

export async function filteredWaiterRows(deps: Deps): Promise<Row[]> {
  const rows: Row[] = [];
  const dir = mkdtempSync(join(os.tmpdir(), 'ra-bench-waiters-'));
  deps.log(`Deliveries with ${WAITERS} filtered waiters: SQLite`);
  const sqlite = await deps.startService(dir);
  try {
    rows.push(row('waiters_sqlite', `Deliveries to one address, ${WAITERS} filtered waiters on it, SQLite`, await measure(sqlite)));
  } finally {
    await sqlite.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  deps.log(`Deliveries with ${WAITERS} filtered waiters: PostgreSQL`);
  const name = `ra_bench_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: deps.pgAdminUrl });
  try {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
  } catch (err) {
    await admin.end().catch(() => {});
    const label = `Deliveries to one address, ${WAITERS} filtered waiters on it, PostgreSQL`;
    rows.push({ key: 'waiters_pg', label, unit: 'deliveries/s', target: 'within 2x of none', met: null, note: `skipped: ${(err as Error).message}` });
    return rows;
  }
  const dbUrl = new URL(deps.pgAdminUrl);
  dbUrl.pathname = `/${name}`;
  const pgDir = mkdtempSync(join(os.tmpdir(), 'ra-bench-waiters-'));
  try {
    const service = await deps.startService(pgDir, { DATABASE_URL: dbUrl.toString() }, []);
    try {
      rows.push(row('waiters_pg', `Deliveries to one address, ${WAITERS} filtered waiters on it, PostgreSQL`, await measure(service)));
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
