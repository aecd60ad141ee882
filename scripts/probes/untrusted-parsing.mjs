#!/usr/bin/env node
// The parsing and budget findings of an adversarial run, measured against the built service of the current checkout
// (npm run build:all), so the same script gives the old and the new numbers: run it in a checkout of
// main before the fix, then after. Each attack runs alone on a fresh address, with /healthz probed
// every 100 ms beside it; printed per attack: the answer (HTTP status or SMTP code), its time, the
// slowest /healthz, and the server's peak RSS above its level before the attack.
//   node scripts/probes/untrusted-parsing.mjs                 # every attack
//   ONLY=mail-spaces,form node scripts/probes/untrusted-parsing.mjs
//   STRIPE_BODY_MB=25 PAUSED_UPLOADS=150 node scripts/probes/untrusted-parsing.mjs   # the adversarial run's sizes
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const freePort = () =>
  new Promise((r) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => r(port));
    });
  });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const only = process.env.ONLY ? new Set(process.env.ONLY.split(',')) : null;
const STRIPE_BODY_MB = Number(process.env.STRIPE_BODY_MB ?? 8);
const PAUSED_UPLOADS = Number(process.env.PAUSED_UPLOADS ?? 40);

const port = await freePort();
const smtpPort = await freePort();
const base = `http://127.0.0.1:${port}`;
const dataDir = mkdtempSync(join(tmpdir(), 'ra-untrusted-'));
const server = spawn(process.execPath, [join(process.cwd(), 'dist/src/server.js')], {
  env: {
    ...process.env,
    PORT: String(port),
    SMTP_PORT: String(smtpPort),
    HOST: '127.0.0.1',
    BASE_URL: base,
    EMAIL_DOMAIN: 'probe.test',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    CREATE_RATE_LIMIT: '100000',
  },
  stdio: ['ignore', 'pipe', 'inherit'],
});
let log = '';
server.stdout.on('data', (d) => {
  log += d.toString();
  if (log.length > 4e6) log = log.slice(-2e6);
});
for (let i = 0; i < 200; i++) {
  try {
    if ((await fetch(`${base}/readyz`)).ok) break;
  } catch {}
  await sleep(100);
}

const rssMb = () => {
  try {
    return Number(readFileSync(`/proc/${server.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]) / 1024;
  } catch {
    return 0;
  }
};

async function measure(name, attack) {
  if (only && !only.has(name)) return;
  await sleep(500);
  const before = rssMb();
  let peak = before;
  let slowest = 0;
  let running = true;
  const sampler = (async () => {
    while (running) {
      peak = Math.max(peak, rssMb());
      await sleep(100);
    }
  })();
  const prober = (async () => {
    while (running) {
      const t = performance.now();
      try {
        await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(120_000) });
      } catch {}
      slowest = Math.max(slowest, performance.now() - t);
      await sleep(100);
    }
  })();
  const t0 = performance.now();
  let result;
  try {
    result = await attack();
  } catch (err) {
    result = `error: ${err.message}`;
  }
  const ms = performance.now() - t0;
  running = false;
  await Promise.all([sampler, prober]);
  console.log(
    `${name.padEnd(16)} answer ${String(result).padEnd(34)} ${(ms / 1000).toFixed(2).padStart(7)} s   slowest /healthz ${(slowest / 1000).toFixed(2).padStart(6)} s   RSS +${(peak - before).toFixed(0).padStart(5)} MB`,
  );
}

async function address() {
  const r = await fetch(`${base}/api/v1/addresses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  return r.json();
}

/** One SMTP transaction sending `raw` as is (bare LFs stay bare); resolves to the final reply line. */
function smtpSend(rcpt, raw) {
  return new Promise((resolve, reject) => {
    const s = connect(smtpPort, '127.0.0.1');
    const steps = ['EHLO probe.example', 'MAIL FROM:<p@probe.example>', `RCPT TO:<${rcpt}>`, 'DATA'];
    let buf = '';
    s.on('data', (d) => {
      buf += d.toString('latin1');
      let i;
      while ((i = buf.indexOf('\n')) !== -1) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (/^\d{3}-/.test(line)) continue;
        if (steps.length > 0) {
          s.write(`${steps.shift()}\r\n`);
          continue;
        }
        if (line.startsWith('354')) {
          s.write(raw);
          s.write('\r\n.\r\n');
          continue;
        }
        s.end('QUIT\r\n');
        resolve(line.slice(0, 30));
        return;
      }
    });
    s.on('error', reject);
  });
}

const headers = 'From: m@attacker.example\r\nTo: x@probe.test\r\nSubject: probe\r\n';

await measure('form', async () => {
  const a = await address();
  const r = await fetch(a.endpoints.hook_url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: Array(27_000).fill('k=v').join('&'),
  });
  return `HTTP ${r.status}`;
});
await measure('query', async () => {
  const q = Array(3500).fill('a=1').join('&');
  const rs = await Promise.all(Array.from({ length: 30 }, () => fetch(`${base}/healthz?${q}`)));
  return `30 x HTTP ${[...new Set(rs.map((r) => r.status))].join('/')}`;
});
await measure('stripe', async () => {
  const a = await address();
  await fetch(`${base}/api/v1/addresses/${a.address.id}/signing-secrets`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${a.credentials.read_token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ stripe: 'whsec_probe' }),
  });
  const sig = `t=${Math.floor(Date.now() / 1000)},${Array.from({ length: 2000 }, (_, i) => `v1=${i.toString(36)}`).join(',')}`;
  const body = JSON.stringify({ id: 'evt_1', object: 'event', type: 'x', pad: 'p'.repeat(STRIPE_BODY_MB * 1024 * 1024) });
  const r = await fetch(a.endpoints.hook_url, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': sig }, body });
  return `HTTP ${r.status} (${STRIPE_BODY_MB} MiB, 2000 v1)`;
});
await measure('mail-spaces', async () => smtpSend((await address()).address.email, Buffer.from(`${headers}\r\nHello${' '.repeat(250_000)}world\r\n`)));
await measure('mail-lf', async () => smtpSend((await address()).address.email, Buffer.from(`${headers}\r\n${'\n'.repeat(1_900_000)}`)));
await measure('mail-dkim', async () => {
  const sigs = Array.from(
    { length: 200 },
    (_, i) => `DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=attacker.example; s=s${i}; l=${1_000_000 + i}; h=from; bh=AAAA; b=AAAA\r\n`,
  ).join('');
  return smtpSend((await address()).address.email, Buffer.from(`${sigs}${headers}\r\n`.padEnd(2_000_000, `${'y'.repeat(998)}\r\n`)));
});
await measure('mail-nested', async () =>
  smtpSend(
    (await address()).address.email,
    Buffer.from(`${headers}Content-Type: message/rfc822\r\n\r\n${'Content-Type: message/rfc822\r\n\r\n'.repeat(60_000)}end\r\n`),
  ),
);
await measure('paused-uploads', async () => {
  const a = await address();
  const url = new URL(a.endpoints.hook_url);
  const statuses = new Map();
  const sockets = await Promise.all(
    Array.from(
      { length: PAUSED_UPLOADS },
      () =>
        new Promise((resolve) => {
          const s = connect(Number(url.port), url.hostname, () => {
            s.write(
              `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/octet-stream\r\nContent-Length: ${24 * 1024 * 1024 + 1}\r\n\r\n`,
            );
            s.write(Buffer.alloc(24 * 1024 * 1024, 0x61), () => resolve(s));
          });
          s.on('data', (d) => {
            const code = /^HTTP\/1\.1 (\d+)/.exec(d.toString())?.[1];
            if (code) statuses.set(s, code);
          });
          s.on('error', () => resolve(s));
        }),
    ),
  );
  await sleep(3000);
  const held = rssMb();
  for (const s of sockets) s.destroy();
  const counts = {};
  for (const s of sockets) {
    const c = statuses.get(s) ?? 'held';
    counts[c] = (counts[c] ?? 0) + 1;
  }
  return `${JSON.stringify(counts)} ${held.toFixed(0)} MB`;
});
await measure('oauth-log', async () => {
  const a = await address();
  const code = `probe-code-${Date.now()}`;
  await new Promise((resolve) => {
    const s = connect(port, '127.0.0.1', () =>
      s.write(`GET ${a.endpoints.hook_url}?code=${code}&state=s HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`),
    );
    s.on('data', () => {});
    s.on('close', resolve);
    s.on('error', resolve);
  });
  await sleep(300);
  return log.includes(code) ? 'code IN THE LOG' : 'code not in the log';
});

server.kill('SIGTERM');
await new Promise((r) => server.once('exit', r));
rmSync(dataDir, { recursive: true, force: true });
