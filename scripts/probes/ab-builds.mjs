#!/usr/bin/env node
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
// Paired A/B of two built checkouts of the service: CPU per delivery of build A against
// build B, in alternating rounds of 30,000 deliveries (50 connections) so machine noise hits both.
//   git worktree add --detach ../a <commit> && (cd ../a && npm install && npm run build:all)
//   node scripts/probes/ab-builds.mjs ../a . hot|spread [rounds] [requestsPerRound]
import autocannon from 'autocannon';
import { freePort, startChild } from '../../dist/bench/processes.js';

const [A, B, scenario = 'hot', roundsArg = '5', amountArg = '40000'] = process.argv.slice(2);
const rounds = Number(roundsArg),
  amount = Number(amountArg);
const clk = 100; // USER_HZ
const cpuMs = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / clk;
};
const WEBHOOK = JSON.stringify({
  type: 'payment.succeeded',
  source: 'bench',
  data: { id: 'pi_3NbT2x', amount: 4200, currency: 'eur', customer: { id: 'cus_9s6XKzkNRiz8i3', email: 'agent@example.com' }, livemode: false },
  metadata: { attempt: '1', provider: 'stripe' },
});
async function start(dir, extra = {}) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const data = mkdtempSync(join(os.tmpdir(), 'ab-'));
  const c = await startChild(
    dir,
    join(dir, 'dist/src/server.js'),
    {
      PORT: String(port),
      HOST: '127.0.0.1',
      BASE_URL: url,
      SMTP_PORT: String(await freePort()),
      SMTP_HOST: '127.0.0.1',
      DATA_DIR: data,
      LOG_LEVEL: process.env.AB_LOG_LEVEL ?? 'warn',
      CREATE_RATE_LIMIT: '1000000',
      MAX_EVENTS_PER_ADDRESS: '100000000',
      MAX_BYTES_PER_ADDRESS: String(2 ** 50),
      ...extra,
    },
    url,
    '/readyz',
    ['--max-semi-space-size=8'],
  );
  c.data = data;
  return c;
}
async function addrs(c, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const r = await fetch(`${c.url}/api/v1/addresses`, { method: 'POST', body: '{"name":"ab"}', headers: { 'content-type': 'application/json' } });
    const j = await r.json();
    out.push(new URL(j.endpoints.inbox_url).pathname);
  }
  return out;
}
function run(c, paths) {
  return new Promise((res, rej) => {
    const c0 = cpuMs(c.pid);
    const req = { method: 'POST', headers: { 'content-type': 'application/json' }, body: WEBHOOK, path: paths[0] };
    if (paths.length > 1) req.setupRequest = (r) => ({ ...r, path: paths[Math.floor(Math.random() * paths.length)] });
    autocannon({ url: c.url, connections: 50, amount, timeout: 30, requests: [req] }, (err, r) => {
      if (err) return rej(err);
      res({ us: ((cpuMs(c.pid) - c0) * 1000) / r.requests.total, rps: r.requests.average, errors: r.non2xx + r.errors });
    });
  });
}
const svcs = { A: await start(A), B: await start(B) };
const paths = { A: await addrs(svcs.A, scenario === 'hot' ? 1 : 100), B: await addrs(svcs.B, scenario === 'hot' ? 1 : 100) };
await run(svcs.A, paths.A);
await run(svcs.B, paths.B); // warm
const res = { A: [], B: [] };
for (let i = 0; i < rounds; i++)
  for (const k of i % 2 ? ['B', 'A'] : ['A', 'B']) {
    const r = await run(svcs[k], paths[k]);
    res[k].push(r);
  }
const med = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
for (const k of ['A', 'B'])
  console.log(
    `${k} ${k === 'A' ? A : B}: CPU µs/delivery median ${med(res[k].map((r) => r.us)).toFixed(1)} [${res[k].map((r) => r.us.toFixed(1)).join(' ')}] rps median ${med(res[k].map((r) => r.rps)).toFixed(0)} errors ${res[k].reduce((s, r) => s + r.errors, 0)}`,
  );
console.log(
  `B/A ${(med(res.B.map((r) => r.us)) / med(res.A.map((r) => r.us))).toFixed(3)} · ${scenario} · load ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
for (const c of Object.values(svcs)) {
  await c.stop();
  rmSync(c.data, { recursive: true, force: true });
}
