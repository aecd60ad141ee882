#!/usr/bin/env node
// The storage and read-path findings of an adversarial run (huge events, pages, streams), measured on a built checkout (npm run build:all):
// each large-event attack against a fresh service, with its status, time, the service's peak RSS
// (VmRSS sampled every 50 ms) and the slowest /healthz answer beside it.
// Usage: node scripts/probes/bounded-work.mjs [checkout dir, default .]   (DATABASE_URL=postgres://… for PostgreSQL)
// Run it on main and on the branch to compare. SKIP_HEAVY=1 leaves out the 10 concurrent GETs and the
// MCP batch, which on a checkout without bounded events take several GB each (or end the process).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(process.argv[2] ?? '.');
const port = Number(process.env.PORT ?? 3994);
const base = `http://127.0.0.1:${port}`;
const dataDir = mkdtempSync(join(tmpdir(), 'ra-probe-27-'));
const env = {
  ...process.env,
  PORT: String(port),
  SMTP_PORT: String(port + 1000),
  HOST: '127.0.0.1',
  DATA_DIR: dataDir,
  LOG_LEVEL: 'warn',
  BASE_URL: base,
  CREATE_RATE_LIMIT: '100000',
  MAX_PAYLOAD_BYTES: String(8 * 1024 * 1024),
};
const proc = spawn(process.execPath, [join(root, 'dist/src/server.js')], { env, stdio: ['ignore', 'ignore', 'inherit'] });
let exited = false;
proc.once('exit', () => {
  exited = true;
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
for (let i = 0; i < 200; i++) {
  try {
    if ((await fetch(`${base}/readyz`)).ok) break;
  } catch {}
  await sleep(100);
}

const rssMb = () => {
  try {
    return Number(readFileSync(`/proc/${proc.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]) / 1024;
  } catch {
    return Number.NaN;
  }
};
/** Runs `fn` with RSS sampling and a /healthz probe beside it. */
async function measure(name, fn) {
  if (exited) return console.log(`${name}: service already dead`);
  const before = rssMb();
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMb());
  }, 50);
  let slowest = 0;
  let probing = true;
  const probe = (async () => {
    while (probing) {
      const t = performance.now();
      try {
        await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(60_000) });
      } catch {}
      slowest = Math.max(slowest, performance.now() - t);
      await sleep(100);
    }
  })();
  const t0 = performance.now();
  let result;
  try {
    result = await fn();
  } catch (err) {
    result = `error: ${err.message}`;
  }
  const ms = performance.now() - t0;
  probing = false;
  await probe;
  clearInterval(sampler);
  console.log(
    `${name}: ${result} | ${ms.toFixed(0)} ms | RSS ${before.toFixed(0)} -> peak ${peak.toFixed(0)} MB | healthz max ${slowest.toFixed(0)} ms${exited ? ' | SERVICE DIED' : ''}`,
  );
}

async function address() {
  const r = await (await fetch(`${base}/api/v1/addresses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).json();
  const inbox = r.endpoints.inbox_url;
  return { id: r.address.id, token: r.credentials.read_token, secret: inbox.slice(inbox.lastIndexOf('/') + 1) };
}
const hook = (a, body, type) =>
  fetch(`${base}/api/v1/hooks/${a.id}/${a.secret}`, { method: 'POST', headers: { 'content-type': type }, body, signal: AbortSignal.timeout(300_000) });
const page = (a) => fetch(`${base}/api/v1/addresses/${a.id}/events`, { headers: { authorization: `Bearer ${a.token}` }, signal: AbortSignal.timeout(300_000) });

const big = await address();
await measure('25 MiB text/plain capture of 0x01 bytes', async () => {
  const r = await hook(big, Buffer.alloc(25 * 1024 * 1024, 1), 'text/plain');
  return `HTTP ${r.status}`;
});
await measure('GET the page holding it', async () => {
  const r = await page(big);
  const b = await r.arrayBuffer();
  return `HTTP ${r.status}, ${(b.byteLength / 2 ** 20).toFixed(1)} MiB of JSON`;
});
const heavy = process.env.SKIP_HEAVY !== '1';
if (heavy)
  await measure('10 concurrent GETs of that page', async () => {
    const rs = await Promise.all(
      Array.from({ length: 10 }, async () => {
        const r = await page(big);
        await r.arrayBuffer();
        return r.status;
      }),
    );
    return `statuses ${rs.join(',')}`;
  });
if (heavy)
  await measure('MCP batch of 10 list_events over it', async () => {
    const body = JSON.stringify(
      Array.from({ length: 10 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'list_events', arguments: {} } })),
    );
    const r = await fetch(`${base}/api/v1/addresses/${big.id}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${big.token}`, accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
      body,
      signal: AbortSignal.timeout(300_000),
    });
    const b = await r.arrayBuffer();
    return `HTTP ${r.status}, ${(b.byteLength / 2 ** 20).toFixed(1)} MiB answer`;
  });
/** `n` streams of address `a` that never read; returns how many were answered 200 and 429. */
async function stuckStreams(a, n) {
  const url = new URL(`${base}/api/v1/addresses/${a.id}/events/stream`);
  const sockets = [];
  const statuses = {};
  for (let i = 0; i < n; i++) {
    sockets.push(
      await new Promise((res) => {
        const s = connect(port, '127.0.0.1', () => {
          s.write(`GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${a.token}\r\n\r\n`);
        });
        s.once('data', (d) => {
          const st = d.toString('latin1').slice(9, 12);
          statuses[st] = (statuses[st] ?? 0) + 1;
          s.pause();
          res(s);
        });
        s.on('error', () => res(s));
      }),
    );
  }
  await sleep(3000);
  return { sockets, statuses };
}
await measure('8 non-reading event streams of it', async () => {
  const { sockets, statuses } = await stuckStreams(big, 8);
  const r = `statuses ${JSON.stringify(statuses)}, RSS held ${rssMb().toFixed(0)} MB`;
  for (const s of sockets) s.destroy();
  return r;
});

const mib = await address();
await hook(mib, JSON.stringify({ pad: 'q'.repeat(1024 * 1024) }), 'application/json');
await measure('500 non-reading streams of a 1 MiB event', async () => {
  const { sockets, statuses } = await stuckStreams(mib, 500);
  const r = `statuses ${JSON.stringify(statuses)}, RSS held ${rssMb().toFixed(0)} MB`;
  for (const s of sockets) s.destroy();
  return r;
});

const small = await address();
await measure('JSON capture with 1e999', async () => {
  await hook(small, '{"n":1e999}', 'application/json');
  const t = await (await page(small)).text();
  return /"body":null/.test(t) ? 'body null (bytes in raw)' : `stored ${t.match(/"body":[^,]*/)?.[0]}`;
});
const digits = await address();
await measure('pretty JSON with a big integer: SSE frame vs GET', async () => {
  await hook(digits, '{\n  "id": 123456789012345678901234567890\n}', 'application/json');
  const t = await (await page(digits)).text();
  const inGet = t.slice('{"events":['.length, t.lastIndexOf('],"next_cursor"'));
  const r = await fetch(`${base}/api/v1/addresses/${digits.id}/events/stream`, { headers: { authorization: `Bearer ${digits.token}` } });
  const reader = r.body.getReader();
  let text = '';
  while (!/\ndata: .*\n\n/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
  await reader.cancel();
  const frame = text.match(/\ndata: (.*)\n\n/)[1];
  return frame === inGet ? 'same bytes' : `differ: GET ${inGet.match(/"id":\s*\d+/)?.[0]} vs SSE ${frame.match(/"id":\s*\d+/)?.[0]}`;
});

proc.kill('SIGTERM');
await new Promise((r) => (exited ? r() : proc.once('exit', r)));
rmSync(dataDir, { recursive: true, force: true });
