// `npm run bench`: the service against the ceiling (bench/ceiling-server.ts), side by side.
//
// Starts the ceiling and the built service (dist/src/server.js) as child processes on free ports,
// runs each scenario against both in alternating rounds (so machine noise hits both), checks after
// every ingest scenario that each 2xx is a stored event and that sequences are gapless, then prints
// the table and writes bench/results/latest.json, bench/results/chart.svg and the table section of
// bench/README.md. It reports; it gates nothing (exit code 0 unless the bench itself broke).
//
// This file selects the rows and runs them in order; each row's scenario is a module of its own
// (ingest.ts, capture.ts, reads.ts, wake.ts, idle.ts, streams.ts, pg-ingest.ts, retention-stores.ts,
// and the older wal-frames.ts, large-events.ts, untrusted-parsing.ts, filter-scenario.ts,
// filtered-waiters.ts, push-delivery.ts); setup.ts holds what they share, report.ts the output.
//
// Knobs (environment): BENCH_SECONDS (per round, default 4), BENCH_ROUNDS (default 3),
// BENCH_ONLY (comma list of: hot, spread, frames, capture, reads, wake, idle, streams, large, pg, untrusted, retention, filter, waiters, push), BENCH_IDLE_POLLS (default 10000),
// BENCH_RETENTION_STORE (sqlite or postgres: run the retention scenario on that store only),
// BENCH_STREAMS (event streams held on one address in the streams scenario, default 1000),
// BENCH_SERVICE_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the service),
// BENCH_METRICS=1 (the services run with METRICS_PORT set: what the Prometheus series cost a delivery),
// BENCH_PG_URL (admin URL, default postgres://postgres@127.0.0.1:5432/postgres).

import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { captureScenario } from './capture.js';
import { filteredReadRows } from './filter-scenario.js';
import { filteredWaiterRows } from './filtered-waiters.js';
import { idleScenario } from './idle.js';
import { ingestScenario } from './ingest.js';
import { largeEventsScenario } from './large-events.js';
import { pgScenario } from './pg-ingest.js';
import { freePort, openFileLimits, startChild } from './processes.js';
import { pushRows } from './push-delivery.js';
import { readsScenario } from './reads.js';
import { type Report, renderChart, renderTable, updateReadme } from './report.js';
import { retentionScenarios } from './retention-stores.js';
import {
  CONNECTIONS,
  createAddress,
  createAddresses,
  details,
  IDLE_POLLS,
  log,
  machine,
  PG_ADMIN_URL,
  ROOT,
  ROUNDS,
  rows,
  SECONDS,
  STREAMS,
  startService,
  WAKE_ROUNDS,
  withFreshService,
} from './setup.js';
import { streamsScenario } from './streams.js';
import { untrustedParsingRows } from './untrusted-parsing.js';
import { wakeScenario } from './wake.js';
import { walFramesRows } from './wal-frames.js';

const ALL_SCENARIOS = [
  'hot',
  'spread',
  'frames',
  'capture',
  'reads',
  'wake',
  'idle',
  'streams',
  'large',
  'pg',
  'untrusted',
  'retention',
  'filter',
  'waiters',
  'push',
];
const ONLY = new Set((process.env.BENCH_ONLY ?? ALL_SCENARIOS.join(',')).split(',').map((s) => s.trim()));

// ---------------------------------------------------------------------------------------------
// Raising the open-file limit: 10,000 long-polls are 10,000 sockets in the bench and in the
// service. A process cannot raise its own limit from JavaScript, so re-run under a shell that does.
{
  const { soft, hard } = openFileLimits();
  const need = Math.max(ONLY.has('idle') ? IDLE_POLLS : 0, ONLY.has('streams') ? STREAMS : 0) + 2000;
  if ((ONLY.has('idle') || ONLY.has('streams')) && soft < need && hard > soft && process.env.BENCH_REEXEC !== '1') {
    const limit = hard === Infinity ? need : Math.min(hard, Math.max(need, soft));
    const r = spawnSync('/bin/sh', ['-c', `ulimit -n ${limit} && exec "$0" "$@"`, process.execPath, ...process.argv.slice(1)], {
      stdio: 'inherit',
      env: { ...process.env, BENCH_REEXEC: '1' },
    });
    process.exit(r.status ?? 1);
  }
}

async function main(): Promise<void> {
  const m = machine();
  const loadBefore = os.loadavg();
  log(`machine: ${m.cpu}, ${m.nproc} cores, ${m.memoryGB} GB, Linux ${m.kernel}, Node ${m.node}; load ${loadBefore.map((x) => x.toFixed(2)).join(' ')}`);
  const dataDir = mkdtempSync(join(os.tmpdir(), 'ra-bench-'));
  const ceilingPort = await freePort();
  const ceiling = await startChild(
    'ceiling',
    join(ROOT, 'dist/bench/ceiling-server.js'),
    { PORT: String(ceilingPort) },
    `http://127.0.0.1:${ceilingPort}`,
    '/api/v1/addresses/x/events',
  );
  const service = await startService(dataDir);
  log(`ceiling ${ceiling.url} (pid ${ceiling.pid}), service ${service.url} (pid ${service.pid}, SQLite in ${dataDir})`);
  try {
    if (ONLY.has('hot')) {
      const hot = [await createAddress(service.url)];
      await ingestScenario('hot', 'Ingest, one hot address', ceiling, [service], hot, service.url);
    }
    if (ONLY.has('spread')) {
      const spread = await createAddresses(service.url, 100);
      await ingestScenario('spread', 'Ingest, 100 addresses', ceiling, [service], spread, service.url);
    }
    if (ONLY.has('frames')) {
      log('WAL frames per commit: the domain service over a SqliteStore in this process, batches of 25 deliveries');
      const frames = await walFramesRows(log);
      rows.push(...frames.rows);
      details.frames = frames.details;
    }
    if (ONLY.has('capture')) await captureScenario(service);
    if (ONLY.has('reads')) await readsScenario(ceiling, service);
    await service.stop();
    // The long-poll scenarios get services of their own, so their memory figures are what the
    // long-polls cost, not what the ingest scenarios left on the heap. The idle target is measured
    // on a fresh service; the same 10,000 polls are held again after the wake rounds, reported.
    if (ONLY.has('idle')) {
      await withFreshService(async (lp) => idleScenario(lp, await createAddresses(lp.url, 1000), 0));
    }
    if (ONLY.has('streams')) await withFreshService(async (sv) => streamsScenario(sv));
    if (ONLY.has('large'))
      await withFreshService(async (sv) => {
        log('large events: memory and event-loop delay under the attacks of the adversarial run');
        rows.push(...(await largeEventsScenario(sv, log)));
      });
    if (ONLY.has('wake')) {
      await withFreshService(async (lp) => {
        const readersAddrs = await createAddresses(lp.url, 1000);
        // One delivery at a time measures the wake-up itself; ten at a time adds the queueing
        // of busy cores on both sides (reported beside it).
        await wakeScenario(lp, readersAddrs, 1, 0);
        await wakeScenario(lp, readersAddrs, 10, WAKE_ROUNDS);
        if (ONLY.has('idle')) await idleScenario(lp, readersAddrs, 2 * WAKE_ROUNDS, true);
      });
    }
    if (ONLY.has('pg')) await pgScenario(ceiling);
    if (ONLY.has('untrusted')) {
      const smtpPort = await freePort();
      const dir = mkdtempSync(join(os.tmpdir(), 'ra-bench-untrusted-'));
      const sv = await startService(dir, { SMTP_PORT: String(smtpPort), EMAIL_DOMAIN: 'bench.test' });
      log('untrusted: mail and parser attacks beside a /healthz probe');
      try {
        rows.push(...(await untrustedParsingRows(sv, smtpPort, log)));
      } finally {
        await sv.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    }
    if (ONLY.has('retention')) await retentionScenarios();
    if (ONLY.has('filter')) rows.push(...(await filteredReadRows({ startService, pgAdminUrl: PG_ADMIN_URL, log })));
    if (ONLY.has('waiters')) rows.push(...(await filteredWaiterRows({ startService, pgAdminUrl: PG_ADMIN_URL, log })));
    if (ONLY.has('push')) rows.push(...(await pushRows({ startService, pgAdminUrl: PG_ADMIN_URL, log })));
  } catch (err) {
    console.error(`bench failed: ${(err as Error).stack}\n--- service output ---\n${service.output()}`);
    process.exitCode = 1;
  } finally {
    await service.stop();
    await ceiling.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  const report: Report = {
    date: new Date().toISOString(),
    machine: m,
    load: { before: loadBefore, after: os.loadavg() },
    settings: { connections: CONNECTIONS, rounds: ROUNDS, secondsPerRound: SECONDS, idlePolls: IDLE_POLLS },
    rows,
    details,
  };
  const table = renderTable(report);
  console.log(`\n${table}\n`);
  const results = join(ROOT, 'bench/results');
  mkdirSync(results, { recursive: true });
  writeFileSync(join(results, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(results, 'chart.svg'), renderChart(report));
  const all = ALL_SCENARIOS.every((x) => ONLY.has(x));
  if (all && process.exitCode !== 1) updateReadme(join(ROOT, 'bench/README.md'), report, table);
  log(`wrote bench/results/latest.json, bench/results/chart.svg${all ? ', bench/README.md' : ''}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
