// Row `idle`: the service's memory holding BENCH_IDLE_POLLS idle long-polls, then waking them all.

import http from 'node:http';
import { pool, request } from './http-client.js';
import { type Child, openFileLimits, rssBytes, sleep } from './processes.js';
import { type Addr, details, fmt, IDLE_POLLS, JSON_HEADERS, log, rows, WEBHOOK } from './setup.js';

/**
 * `after`: how many events each address holds already (the polls wait for the next).
 * `afterWakeRounds`: the same service ran the wake scenarios first; reported beside the target
 * row, since V8 keeps the heap those rounds grew.
 */
export async function idleScenario(service: Child, addrs: Addr[], after: number, afterWakeRounds = false): Promise<void> {
  const label = `${fmt(IDLE_POLLS)} idle long-polls held at once${afterWakeRounds ? ', after the wake rounds' : ''}`;
  const { soft } = openFileLimits();
  log(`${label} (wait=25, ${addrs.length} addresses, ulimit -n ${soft})`);
  // Four source addresses, so the sockets do not run short of ephemeral ports.
  const agents = [1, 2, 3, 4].map((x) => new http.Agent({ keepAlive: true, maxSockets: Infinity, localAddress: `127.0.0.${x}` }));
  const rssBefore = rssBytes(service.pid);
  let errors = 0;
  let early = 0;
  let finished = 0;
  const polls: Promise<void>[] = [];
  for (let i = 0; i < IDLE_POLLS; i++) {
    const a = addrs[i % addrs.length] as Addr;
    polls.push(
      request(agents[i % agents.length] as http.Agent, new URL(`${service.url}${a.eventsPath}?after=${after}&wait=25`), {
        headers: { authorization: `Bearer ${a.token}` },
      }).then(
        (r) => {
          finished++;
          if (r.status !== 200 || (JSON.parse(r.body).events as unknown[]).length !== 1) errors++;
        },
        () => {
          finished++;
          errors++;
        },
      ),
    );
    if (i % 500 === 499) await sleep(25);
  }
  // Let the service take every connection in, then wait for its memory to settle.
  let rss = rssBytes(service.pid);
  for (let i = 0; i < 20; i++) {
    await sleep(500);
    const now = rssBytes(service.pid);
    if (Math.abs(now - rss) < 512 * 1024 && i >= 3) {
      rss = now;
      break;
    }
    rss = now;
  }
  early = finished;
  log(
    `  service RSS ${(rssBefore / 2 ** 20).toFixed(1)} MB before, ${(rss / 2 ** 20).toFixed(1)} MB holding ${fmt(IDLE_POLLS)} long-polls (${early} ended early)`,
  );
  // Now wake them all: one delivery per address; every poll must answer 200 with that event.
  const writers = new http.Agent({ keepAlive: true, maxSockets: 10 });
  const w0 = performance.now();
  await pool(addrs, 10, (a) => request(writers, new URL(service.url + a.inboxPath), { method: 'POST', headers: JSON_HEADERS, body: WEBHOOK }));
  await Promise.all(polls);
  const wakeAllMs = performance.now() - w0;
  log(`  all ${fmt(IDLE_POLLS)} answered ${wakeAllMs.toFixed(0)} ms after the first delivery; ${errors} errors`);
  rows.push({
    key: afterWakeRounds ? 'idle_rss_after_wake' : 'idle_rss',
    label,
    unit: 'MB RSS',
    service: rss / 2 ** 20,
    target: afterWakeRounds ? 'reported' : '< 200 MB, 0 errors',
    met: (afterWakeRounds || rss < 200 * 2 ** 20) && errors === 0 && early === 0,
    note: `${(rssBefore / 2 ** 20).toFixed(0)} MB before; ${errors} errors; all woken in ${wakeAllMs.toFixed(0)} ms`,
  });
  details[afterWakeRounds ? 'idle_after_wake' : 'idle'] = { polls: IDLE_POLLS, rssBefore, rss, errors, early, wakeAllMs };
  for (const a of agents) a.destroy();
  writers.destroy();
}
