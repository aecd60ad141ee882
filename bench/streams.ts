// Row `streams`: memory per held event stream, and the fan-out of one delivery to all of them.

import http from 'node:http';
import { percentile, request } from './http-client.js';
import { type Child, rssBytes, sleep } from './processes.js';
import { collectBenchGarbage, createAddress, details, fmt, JSON_HEADERS, log, median, rows, STREAMS, WAKE_ROUNDS, WEBHOOK } from './setup.js';

/** One held event stream: its arrival times by sequence. */
interface HeldStream {
  arrivals: Map<number, number>;
  req: http.ClientRequest;
}

function holdStream(agent: http.Agent, url: URL, token: string, opened: () => void, failed: () => void): HeldStream {
  const held: HeldStream = { arrivals: new Map(), req: undefined as unknown as http.ClientRequest };
  held.req = http.get({ agent, host: url.hostname, port: url.port, path: url.pathname, headers: { authorization: `Bearer ${token}` } }, (res) => {
    if (res.statusCode !== 200) return failed();
    opened();
    let buffer = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      const at = performance.now();
      buffer += chunk;
      let end = buffer.indexOf('\n\n');
      while (end !== -1) {
        const m = /^id: (\d+)$/m.exec(buffer.slice(0, end));
        if (m) held.arrivals.set(Number(m[1]), at);
        buffer = buffer.slice(end + 2);
        end = buffer.indexOf('\n\n');
      }
    });
  });
  held.req.on('error', failed);
  return held;
}

/**
 * STREAMS event streams held on one address: the memory each costs (RSS delta / STREAMS, beside
 * the idle long-polls' figure), then deliveries one at a time, each reaching every stream: the
 * fan-out latency from the delivery's 202 to each stream's copy.
 */
export async function streamsScenario(service: Child): Promise<void> {
  const label = `${fmt(STREAMS)} event streams held on one address`;
  log(`${label}: memory per stream, then fan-out of ${WAKE_ROUNDS} deliveries to all of them`);
  const a = await createAddress(service.url);
  const url = new URL(`${service.url}${a.eventsPath}/stream`);
  const agents = [1, 2, 3, 4].map((x) => new http.Agent({ keepAlive: false, maxSockets: Infinity, localAddress: `127.0.0.${x}` }));
  const rssBefore = rssBytes(service.pid);
  let opened = 0;
  let failed = 0;
  const streams: HeldStream[] = [];
  for (let i = 0; i < STREAMS; i++) {
    streams.push(
      holdStream(
        agents[i % agents.length] as http.Agent,
        url,
        a.token,
        () => opened++,
        () => failed++,
      ),
    );
    if (i % 250 === 249) await sleep(25);
  }
  for (let i = 0; i < 200 && opened + failed < STREAMS; i++) await sleep(50);
  let rss = rssBytes(service.pid);
  for (let i = 0; i < 20; i++) {
    await sleep(500);
    const now = rssBytes(service.pid);
    if (Math.abs(now - rss) < 256 * 1024 && i >= 3) {
      rss = now;
      break;
    }
    rss = now;
  }
  const perStreamKB = (rss - rssBefore) / STREAMS / 1024;
  log(
    `  service RSS ${(rssBefore / 2 ** 20).toFixed(1)} MB before, ${(rss / 2 ** 20).toFixed(1)} MB holding ${fmt(opened)} streams ` +
      `(${perStreamKB.toFixed(1)} KB each; ${failed} failed)`,
  );
  const writers = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const rounds: { p50: number; p99: number; max: number; missing: number }[] = [];
  for (let round = 1; round <= WAKE_ROUNDS; round++) {
    collectBenchGarbage();
    const d = await request(writers, new URL(service.url + a.inboxPath), { method: 'POST', headers: JSON_HEADERS, body: WEBHOOK });
    if (d.status !== 202) throw new Error(`delivery answered ${d.status}`);
    const seq = JSON.parse(d.body).event.sequence as number;
    for (let i = 0; i < 100 && streams.some((s) => !s.arrivals.has(seq)); i++) await sleep(20);
    const lat = streams
      .flatMap((s) => {
        const at = s.arrivals.get(seq);
        return at === undefined ? [] : [at - d.endAt];
      })
      .sort((x, y) => x - y);
    rounds.push({ p50: percentile(lat, 50), p99: percentile(lat, 99), max: lat.at(-1) ?? NaN, missing: STREAMS - lat.length });
    const r = rounds.at(-1) as (typeof rounds)[number];
    log(
      `  delivery ${round}: reached ${lat.length} streams; after its 202: p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms, max ${r.max.toFixed(2)} ms`,
    );
    await sleep(200);
  }
  const missing = rounds.reduce((n, r) => n + r.missing, 0);
  // Every stream must also hold every sequence, in order, once.
  const gapless = streams.every((s) => [...s.arrivals.keys()].every((k, i) => k === i + 1));
  const idle = details.idle as { polls: number; rssBefore: number; rss: number } | undefined;
  const perPoll = idle ? ` vs ${((idle.rss - idle.rssBefore) / idle.polls / 1024).toFixed(1)} KB per idle long-poll` : '';
  rows.push({
    key: 'stream_rss',
    label: `Memory per held event stream (${fmt(STREAMS)} streams)`,
    unit: 'KB RSS',
    service: perStreamKB,
    target: 'reported',
    met: failed === 0,
    note: `${(rssBefore / 2 ** 20).toFixed(0)} -> ${(rss / 2 ** 20).toFixed(0)} MB RSS${perPoll}; ${failed} failed`,
  });
  const p99 = median(rounds.map((r) => r.p99));
  rows.push({
    key: 'stream_fanout_p99',
    label: `Stream fan-out latency p99, one event to ${fmt(STREAMS)} streams`,
    unit: 'ms',
    service: p99,
    target: 'reported',
    met: missing === 0 && gapless,
    note:
      `after the 202; median of ${WAKE_ROUNDS} deliveries; p50 ${median(rounds.map((r) => r.p50)).toFixed(2)} ms; ` +
      `max ${Math.max(...rounds.map((r) => r.max)).toFixed(2)} ms; ${missing} copies missing; ${gapless ? 'in order' : 'OUT OF ORDER'}`,
  });
  details.streams = { streams: STREAMS, opened, failed, rssBefore, rss, perStreamKB, rounds, gapless };
  for (const s of streams) s.req.destroy();
  for (const x of agents) x.destroy();
  writers.destroy();
}
