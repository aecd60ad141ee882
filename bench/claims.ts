// `node dist/bench/claims.js` (npm run bench:claims): claims per second beside plain deliveries.
//
// For each store (SQLite; PostgreSQL unless BENCH_CLAIMS_STORES leaves it out) and each layout (one
// address; 100 addresses), starts the built service, lets 8 senders deliver for BENCH_SECONDS (the
// plain-delivery rate), then lets 8 workers claim and ack those events for BENCH_SECONDS: one
// "claim" is a claim of max events plus an ack per event, so claims/s counts events leased and
// acked, measured until the delivered events run out on an address. Checks that no event was
// leased twice. Prints a table; writes bench/results/claims.json.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { request } from './http-client.js';
import { type Child, freePort, startChild } from './processes.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const WORKERS = 8;
const STORES = (process.env.BENCH_CLAIMS_STORES ?? 'sqlite,postgres').split(',');
const PG_ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const WEBHOOK = JSON.stringify({ type: 'payment.succeeded', data: { id: 'pi_3NbT2x', amount: 4200, currency: 'eur' } });
const JSON_HEADERS = { 'content-type': 'application/json' };

interface Addr {
  id: string;
  token: string;
  inbox: URL;
}

async function startService(env: Record<string, string>): Promise<Child> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  return startChild(
    'service',
    join(ROOT, 'dist/src/server.js'),
    {
      PORT: String(port),
      HOST: '127.0.0.1',
      BASE_URL: url,
      SMTP_PORT: String(await freePort()),
      SMTP_HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      CREATE_RATE_LIMIT: '1000000',
      MAX_EVENTS_PER_ADDRESS: '100000000',
      MAX_BYTES_PER_ADDRESS: String(2 ** 50),
      ...env,
    },
    url,
    '/readyz',
  );
}

async function createAddress(base: string): Promise<Addr> {
  const r = await fetch(`${base}/api/v1/addresses`, { method: 'POST' });
  const b = (await r.json()) as { address: { id: string }; credentials: { read_token: string }; endpoints: { inbox_url: string } };
  return { id: b.address.id, token: b.credentials.read_token, inbox: new URL(b.endpoints.inbox_url) };
}

/**
 * `WORKERS` loops of `step` for SECONDS, or until a step answers -1 (the queue is drained): the sum
 * of what the steps counted, per second of the time the loops ran.
 */
async function loops(step: (worker: number, round: number) => Promise<number>): Promise<number> {
  const start = performance.now();
  const end = start + SECONDS * 1000;
  let total = 0;
  let drained = false;
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, w) => {
      for (let round = 0; performance.now() < end && !drained; round++) {
        const n = await step(w, round);
        if (n < 0) drained = true;
        else total += n;
      }
    }),
  );
  return total / ((performance.now() - start) / 1000);
}

async function layout(base: string, addresses: number, max: number): Promise<{ deliveries: number; claims: number; doubled: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: WORKERS * 2 });
  const addrs = await Promise.all(Array.from({ length: addresses }, () => createAddress(base)));
  const pick = (w: number, round: number) => addrs[(w + round * WORKERS) % addrs.length]!;
  const deliveries = await loops(async (w, round) => {
    const r = await request(agent, pick(w, round).inbox, { method: 'POST', headers: JSON_HEADERS, body: WEBHOOK });
    if (r.status !== 202) throw new Error(`delivery: ${r.status} ${r.body}`);
    return 1;
  });
  const leased = new Set<string>();
  let doubled = 0;
  const claims = await loops(async (w, round) => {
    const a = pick(w, round);
    const headers = { ...JSON_HEADERS, authorization: `Bearer ${a.token}` };
    const r = await request(agent, new URL(`${base}/api/v1/addresses/${a.id}/claims`), {
      method: 'POST',
      headers,
      body: JSON.stringify({ max, lease_seconds: 300 }),
    });
    if (r.status !== 200) throw new Error(`claim: ${r.status} ${r.body}`);
    const got = (JSON.parse(r.body) as { claims: { event: { id: string }; lease_id: string }[] }).claims;
    for (const c of got) {
      if (leased.has(c.event.id)) doubled++;
      leased.add(c.event.id);
      const ack = await request(agent, new URL(`${base}/api/v1/addresses/${a.id}/claims/${c.lease_id}/ack`), {
        method: 'POST',
        headers: { authorization: headers.authorization },
      });
      if (ack.status !== 200) throw new Error(`ack: ${ack.status} ${ack.body}`);
    }
    // One address drained: the rate is measured up to here (the events delivered bound it).
    return got.length === 0 ? -1 : got.length;
  });
  agent.destroy();
  return { deliveries, claims, doubled };
}

const rows: { store: string; layout: string; max: number; deliveries: number; claims: number; doubled: number }[] = [];
for (const store of STORES) {
  for (const [addresses, max] of [
    [1, 1],
    [100, 1],
    [1, 10],
    [100, 10],
  ] as const) {
    const dataDir = mkdtempSync(join(os.tmpdir(), 'ra-bench-claims-'));
    let dbName: string | undefined;
    const env: Record<string, string> = { DATA_DIR: dataDir };
    if (store === 'postgres') {
      dbName = `ra_bench_claims_${process.pid}_${addresses}_${max}`;
      const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${dbName}`);
      await admin.query(`CREATE DATABASE ${dbName}`);
      await admin.end();
      const url = new URL(PG_ADMIN_URL);
      url.pathname = `/${dbName}`;
      env.DATABASE_URL = url.toString();
    }
    const svc = await startService(env);
    try {
      const r = await layout(svc.url, addresses, max);
      rows.push({ store, layout: addresses === 1 ? 'one address' : '100 addresses', max, ...r });
      console.log(
        `${store}, ${addresses === 1 ? 'one address' : '100 addresses'}, max ${max}: deliveries ${Math.round(r.deliveries)}/s, ` +
          `claims (claimed + acked) ${Math.round(r.claims)}/s, leased twice: ${r.doubled}`,
      );
    } finally {
      await svc.stop();
      rmSync(dataDir, { recursive: true, force: true });
      if (dbName) {
        const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
        await admin.connect();
        await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
        await admin.end();
      }
    }
  }
}
mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
writeFileSync(
  join(ROOT, 'bench/results/claims.json'),
  `${JSON.stringify({ at: new Date().toISOString(), seconds: SECONDS, workers: WORKERS, cpus: os.cpus().length, rows }, null, 2)}\n`,
);
if (rows.some((r) => r.doubled > 0)) process.exitCode = 1;
