// Bench rows for the large-event attacks of an adversarial run: the service's peak RSS and the slowest /healthz
// answer (its event-loop delay as a client sees it) while they run: a 25 MiB capture of control
// bytes, ten concurrent GETs and an MCP batch of ten list_events over it, and 100 streams that never
// read three 3.9 MiB events. Before bounded events the first peaked at ~6 GB and stalled the loop
// for tens of seconds.
import { connect, type Socket } from 'node:net';
import { type Child, rssBytes, sleep } from './processes.js';
import type { Row } from './report.js';

async function createAddress(base: string): Promise<{ id: string; token: string; secret: string }> {
  const r = (await (await fetch(`${base}/api/v1/addresses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).json()) as any;
  const inbox: string = r.endpoints.inbox_url;
  return { id: r.address.id, token: r.credentials.read_token, secret: inbox.slice(inbox.lastIndexOf('/') + 1) };
}

/** Runs `attack` while sampling the service's RSS (every 50 ms) and timing /healthz (every 100 ms). */
async function underAttack(
  service: Child,
  attack: () => Promise<string>,
): Promise<{ peakMb: number; beforeMb: number; healthzMaxMs: number; outcome: string; ms: number }> {
  const beforeMb = rssBytes(service.pid) / 2 ** 20;
  let peakMb = beforeMb;
  const sampler = setInterval(() => {
    peakMb = Math.max(peakMb, rssBytes(service.pid) / 2 ** 20);
  }, 50);
  let healthzMaxMs = 0;
  let probing = true;
  const probe = (async () => {
    while (probing) {
      const t = performance.now();
      try {
        await (await fetch(`${service.url}/healthz`, { signal: AbortSignal.timeout(60_000) })).arrayBuffer();
      } catch {
        /* counted as slow */
      }
      healthzMaxMs = Math.max(healthzMaxMs, performance.now() - t);
      await sleep(100);
    }
  })();
  const t0 = performance.now();
  const outcome = await attack();
  const ms = performance.now() - t0;
  probing = false;
  await probe;
  clearInterval(sampler);
  return { peakMb, beforeMb, healthzMaxMs, outcome, ms };
}

export async function largeEventsScenario(service: Child, log: (s: string) => void): Promise<Row[]> {
  const base = service.url;
  const a = await createAddress(base);
  const auth = { authorization: `Bearer ${a.token}` };
  const rows: Row[] = [];
  const row = (key: string, label: string, r: Awaited<ReturnType<typeof underAttack>>, target: number) => {
    log(
      `  ${label}: ${r.outcome}, ${r.ms.toFixed(0)} ms, RSS ${r.beforeMb.toFixed(0)} -> ${r.peakMb.toFixed(0)} MB, healthz max ${r.healthzMaxMs.toFixed(0)} ms`,
    );
    rows.push({
      key: `${key}_rss`,
      label: `${label}: peak RSS growth`,
      unit: 'MB',
      service: r.peakMb - r.beforeMb,
      target: `< ${target} MB`,
      met: r.peakMb - r.beforeMb < target,
      note: `${r.outcome}; ${r.ms.toFixed(0)} ms`,
    });
    rows.push({
      key: `${key}_loop`,
      label: `${label}: slowest /healthz`,
      unit: 'ms',
      service: r.healthzMaxMs,
      target: '< 1000 ms',
      met: r.healthzMaxMs < 1000,
      note: "the event loop's delay as a client sees it",
    });
  };
  row(
    'large_capture',
    '25 MiB capture of 0x01 bytes',
    await underAttack(service, async () => {
      const r = await fetch(`${base}/api/v1/hooks/${a.id}/${a.secret}`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: Buffer.alloc(25 * 1024 * 1024, 1),
      });
      return `HTTP ${r.status}`;
    }),
    400,
  );
  row(
    'large_reads',
    '10 concurrent GETs of its page',
    await underAttack(service, async () => {
      const s = await Promise.all(
        Array.from({ length: 10 }, async () => {
          const r = await fetch(`${base}/api/v1/addresses/${a.id}/events`, { headers: auth });
          await r.arrayBuffer();
          return r.status;
        }),
      );
      return `HTTP ${[...new Set(s)].join('/')}`;
    }),
    200,
  );
  row(
    'large_mcp',
    'MCP batch of 10 list_events over it',
    await underAttack(service, async () => {
      const body = JSON.stringify(
        Array.from({ length: 10 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'list_events', arguments: {} } })),
      );
      const r = await fetch(`${base}/api/v1/addresses/${a.id}/mcp`, {
        method: 'POST',
        headers: { ...auth, accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
        body,
      });
      await r.arrayBuffer();
      return `HTTP ${r.status}`;
    }),
    200,
  );
  const b = await createAddress(base);
  for (let i = 0; i < 3; i++) {
    await fetch(`${base}/api/v1/hooks/${b.id}/${b.secret}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ i, pad: 'p'.repeat(3.9 * 1024 * 1024) }),
    });
  }
  row(
    'large_streams',
    '100 non-reading streams of three 3.9 MiB events',
    await underAttack(service, async () => {
      const url = new URL(`${base}/api/v1/addresses/${b.id}/events/stream`);
      const sockets: Socket[] = [];
      for (let i = 0; i < 100; i++) {
        sockets.push(
          await new Promise<Socket>((resolve) => {
            const s = connect(Number(url.port), url.hostname, () => {
              s.write(`GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${b.token}\r\n\r\n`);
              s.pause();
              resolve(s);
            });
            s.on('error', () => resolve(s));
          }),
        );
      }
      await sleep(3000);
      for (const s of sockets) s.destroy();
      return '100 streams held 3 s';
    }),
    200,
  );
  return rows;
}
