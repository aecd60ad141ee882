// Row `wake`: long-poll wake latency of 1,000 readers, deliveries one and ten at a time.

import http from 'node:http';
import { percentile, pool, request } from './http-client.js';
import { type Child, sleep } from './processes.js';
import { type Addr, collectBenchGarbage, details, JSON_HEADERS, log, median, rows, WAKE_ROUNDS, WEBHOOK } from './setup.js';

/**
 * WAKE_ROUNDS rounds; in round r every address receives its r-th event. A few samples of the
 * 1,000 can be delayed by the scheduler (the bench and the service share 2 cores), so the median
 * round is reported, with every round's p99 in the notes.
 */
export async function wakeScenario(service: Child, addrs: Addr[], inFlight: number, firstRound: number): Promise<void> {
  const label = 'Long-poll wake latency, 1,000 readers';
  log(`${label}: one delivery each, ${inFlight} in flight, ${WAKE_ROUNDS} rounds`);
  const readers = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  const writers = new http.Agent({ keepAlive: true, maxSockets: 10 });
  const rounds: { p50: number; p99: number; max: number; fromPostP50: number; fromPostP99: number; errors: number; woken: number }[] = [];
  for (let round = 0; round < WAKE_ROUNDS; round++) {
    const waiting = addrs.map((a) =>
      request(readers, new URL(`${service.url}${a.eventsPath}?after=${firstRound + round}&wait=25`), { headers: { authorization: `Bearer ${a.token}` } }),
    );
    await sleep(1000);
    // A collection in the bench between a delivery's answer and its reader's would count as
    // wake latency: collect now, before the clock runs.
    collectBenchGarbage();
    const delivered = await pool(addrs, inFlight, async (a) => {
      const r = await request(writers, new URL(service.url + a.inboxPath), { method: 'POST', headers: JSON_HEADERS, body: WEBHOOK });
      return { ...r, id: r.status === 202 ? (JSON.parse(r.body).event.id as string) : '' };
    });
    const woken = await Promise.all(waiting);
    let errors = 0;
    const lat: number[] = [];
    const fromPost: number[] = [];
    woken.forEach((w, i) => {
      const d = delivered[i];
      const events = w.status === 200 ? (JSON.parse(w.body).events as { id: string }[]) : [];
      if (d?.status !== 202 || events[0]?.id !== d.id) errors++;
      else {
        // Negative when the reader's answer arrives first: it is written in the same turn of the
        // service's event loop as the 202, and can leave before it.
        lat.push(w.endAt - d.endAt);
        fromPost.push(w.endAt - d.startAt);
      }
    });
    lat.sort((x, y) => x - y);
    fromPost.sort((x, y) => x - y);
    rounds.push({
      p50: percentile(lat, 50),
      p99: percentile(lat, 99),
      max: lat.at(-1) ?? NaN,
      fromPostP50: percentile(fromPost, 50),
      fromPostP99: percentile(fromPost, 99),
      errors,
      woken: lat.length,
    });
    const r = rounds.at(-1) as (typeof rounds)[number];
    log(
      `  round ${round + 1}: wake latency p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms, max ${r.max.toFixed(2)} ms; ` +
        `from the POST: p50 ${r.fromPostP50.toFixed(2)} ms, p99 ${r.fromPostP99.toFixed(2)} ms; ${errors} errors`,
    );
  }
  const p50 = median(rounds.map((r) => r.p50));
  const p99 = median(rounds.map((r) => r.p99));
  const errors = rounds.reduce((n, r) => n + r.errors, 0);
  const p99s = rounds.map((r) => r.p99.toFixed(2)).join(', ');
  const max = Math.max(...rounds.map((r) => r.max)).toFixed(2);
  const fromPost =
    `from the POST being sent (durable commit included): p50 ${median(rounds.map((r) => r.fromPostP50)).toFixed(2)} ms, ` +
    `p99 ${median(rounds.map((r) => r.fromPostP99)).toFixed(2)} ms`;
  if (inFlight === 1) {
    rows.push({
      key: 'wake_p50',
      label: 'Long-poll wake latency p50',
      unit: 'ms',
      service: p50,
      target: 'reported',
      met: errors === 0,
      note: `${WAKE_ROUNDS} rounds of 1,000 readers, deliveries one at a time; median round`,
    });
    rows.push({
      key: 'wake_p99',
      label: 'Long-poll wake latency p99',
      unit: 'ms',
      service: p99,
      target: '< 5 ms',
      met: p99 < 5 && errors === 0,
      note: `rounds: ${p99s} ms; max ${max} ms; ${errors} errors; ${fromPost}`,
    });
  } else {
    rows.push({
      key: `wake_p99_${inFlight}`,
      label: `Wake latency p99, ${inFlight} deliveries in flight`,
      unit: 'ms',
      service: p99,
      target: 'reported',
      met: errors === 0,
      note: `rounds: ${p99s} ms; p50 ${p50.toFixed(2)} ms; max ${max} ms; ${errors} errors; ${fromPost}`,
    });
  }
  details[`wake_${inFlight}_in_flight`] = { rounds, p50, p99, errors, readers: addrs.length };
  readers.destroy();
  writers.destroy();
}
