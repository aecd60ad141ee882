// The push row (design.md, "Push subscriptions"): events per second that one webhook subscription
// delivers to a local receiver, and the lag of each event from its delivery's 202 to its arrival at
// the receiver (p50 and p99), on each store. A burst of EVENTS deliveries goes in on 8 keep-alive
// connections; the receiver answers 204 at once, checks every signature with the standardwebhooks
// package and that the events arrive in sequence order, once each.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import type { Child } from './processes.js';
import type { Row } from './report.js';

const EVENTS = 500;
const SENDERS = 8;

interface Deps {
  startService(dataDir: string, extra?: Record<string, string>, nodeArgs?: string[]): Promise<Child>;
  pgAdminUrl: string;
  log(s: string): void;
}

interface Measured {
  perSecond: number;
  p50: number;
  p99: number;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;

async function measure(service: Child): Promise<Measured> {
  const created = await fetch(`${service.url}/api/v1/addresses`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
  const address = (await created.json()) as { address: { id: string }; endpoints: { inbox_url: string }; credentials: { read_token: string } };
  const accepted = new Map<number, number>();
  const arrived = new Map<number, number>();
  let lastSequence = 0;
  let wrong = '';
  let verify: Webhook | undefined;
  let done: () => void = () => {};
  const allArrived = new Promise<void>((resolve) => {
    done = resolve;
  });
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        const event = (verify as Webhook).verify(body, req.headers as Record<string, string>) as { sequence: number };
        if (event.sequence !== lastSequence + 1) wrong ||= `sequence ${event.sequence} arrived after ${lastSequence}`;
        lastSequence = event.sequence;
        arrived.set(event.sequence, performance.now());
      } catch (err) {
        wrong ||= `a POST did not verify: ${(err as Error).message}`;
      }
      res.writeHead(204).end();
      if (arrived.size >= EVENTS) done();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const target = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  try {
    const sub = await fetch(`${service.url}/api/v1/addresses/${address.address.id}/subscriptions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${address.credentials.read_token}` },
      body: JSON.stringify({ url: target }),
    });
    const subscription = (await sub.json()) as { secret?: string };
    if (sub.status !== 201 || !subscription.secret) throw new Error(`subscribe answered ${sub.status}: ${JSON.stringify(subscription)}`);
    verify = new Webhook(subscription.secret);
    const agent = new http.Agent({ keepAlive: true, maxSockets: SENDERS });
    let next = 0;
    const t0 = performance.now();
    const sender = async () => {
      while (next < EVENTS) {
        next++;
        const body = JSON.stringify({ type: 'bench.push', data: { n: next } });
        const seq = await new Promise<number>((resolve, reject) => {
          const req = http.request(
            address.endpoints.inbox_url,
            { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
            (res) => {
              let text = '';
              res.setEncoding('utf8');
              res.on('data', (d: string) => {
                text += d;
              });
              res.on('end', () =>
                res.statusCode === 202 ? resolve(Number(/"sequence":(\d+)/.exec(text)?.[1])) : reject(new Error(`delivery ${res.statusCode}`)),
              );
            },
          );
          req.on('error', reject);
          req.end(body);
        });
        accepted.set(seq, performance.now());
      }
    };
    await Promise.all(Array.from({ length: SENDERS }, sender));
    const timeout = setTimeout(() => done(), 120_000);
    await allArrived;
    clearTimeout(timeout);
    agent.destroy();
    if (wrong) throw new Error(wrong);
    if (arrived.size < EVENTS) throw new Error(`${arrived.size} of ${EVENTS} events arrived within 120 s`);
    const last = Math.max(...arrived.values());
    const lags = [...arrived].map(([seq, at]) => at - (accepted.get(seq) ?? at)).sort((a, b) => a - b);
    return { perSecond: EVENTS / ((last - t0) / 1000), p50: percentile(lags, 50), p99: percentile(lags, 99) };
  } finally {
    receiver.closeAllConnections();
    await new Promise((r) => receiver.close(r));
  }
}

function row(key: string, label: string, m: Measured): Row {
  return {
    key,
    label,
    unit: 'events/s',
    service: m.perSecond,
    target: 'reported',
    met: true,
    note:
      `${EVENTS} deliveries on ${SENDERS} connections, one subscription to a local receiver (PUSH_ALLOW_PRIVATE=true), every signature verified and ` +
      `the order checked; lag from a delivery's 202 to its arrival: p50 ${m.p50.toFixed(0)} ms, p99 ${m.p99.toFixed(0)} ms (a burst queues behind one ` +
      'subscription: each event is POSTed alone, in order)',
  };
}

export async function pushRows(deps: Deps): Promise<Row[]> {
  const rows: Row[] = [];
  const env = { PUSH_ALLOW_PRIVATE: 'true' };
  const dir = mkdtempSync(join(os.tmpdir(), 'ra-bench-push-'));
  deps.log(`Push: ${EVENTS} events to one webhook subscription, SQLite`);
  const sqlite = await deps.startService(dir, env);
  try {
    rows.push(row('push_sqlite', 'Events pushed to one webhook subscription, SQLite', await measure(sqlite)));
  } finally {
    await sqlite.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  deps.log(`Push: ${EVENTS} events to one webhook subscription, PostgreSQL`);
  const name = `ra_bench_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: deps.pgAdminUrl });
  try {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
  } catch (err) {
    await admin.end().catch(() => {});
    rows.push({
      key: 'push_pg',
      label: 'Events pushed to one webhook subscription, PostgreSQL',
      unit: 'events/s',
      target: 'reported',
      met: null,
      note: `skipped: ${(err as Error).message}`,
    });
    return rows;
  }
  const dbUrl = new URL(deps.pgAdminUrl);
  dbUrl.pathname = `/${name}`;
  const pgDir = mkdtempSync(join(os.tmpdir(), 'ra-bench-push-'));
  try {
    const service = await deps.startService(pgDir, { ...env, DATABASE_URL: dbUrl.toString() }, []);
    try {
      rows.push(row('push_pg', 'Events pushed to one webhook subscription, PostgreSQL', await measure(service)));
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
