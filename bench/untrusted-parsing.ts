// The `untrusted` scenario of `npm run bench`: the mail and parser attacks, one after the
// other against one service, with /healthz asked every 20 ms beside them. Reported: the slowest
// /healthz (the event loop's worst delay as a client sees it; target under 1 s) and the service's
// peak RSS above its level before the attacks. Attacks: a text mail with a 250 KB run of spaces, a
// 1.9 MB mail of bare line feeds, 200 DKIM signatures over 2 MB, 60,000 nested message/rfc822 parts,
// an 80 KB form repeating one key, 30 query strings of 14 KB repeating one key, and a Stripe-Signature
// of 2,000 v1 entries over 8 MiB.
import { connect } from 'node:net';
import { type Child, rssBytes, sleep } from './processes.js';
import type { Row } from './report.js';

interface Attack {
  name: string;
  run: () => Promise<string>;
}

async function createAddress(base: string): Promise<{ id: string; token: string; email: string; hook: string }> {
  const r = await fetch(`${base}/api/v1/addresses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  const b = (await r.json()) as { address: { id: string; email: string }; credentials: { read_token: string }; endpoints: { hook_url: string } };
  return { id: b.address.id, token: b.credentials.read_token, email: b.address.email, hook: b.endpoints.hook_url };
}

function smtpSend(smtpPort: number, rcpt: string, raw: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(smtpPort, '127.0.0.1');
    const steps = ['EHLO bench.example', 'MAIL FROM:<b@bench.example>', `RCPT TO:<${rcpt}>`, 'DATA'];
    let buf = '';
    s.on('data', (d: Buffer) => {
      buf += d.toString('latin1');
      for (let i = buf.indexOf('\n'); i !== -1; i = buf.indexOf('\n')) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (/^\d{3}-/.test(line)) continue;
        const next = steps.shift();
        if (next !== undefined) {
          s.write(`${next}\r\n`);
        } else if (line.startsWith('354')) {
          s.write(raw);
          s.write('\r\n.\r\n');
        } else {
          s.end('QUIT\r\n');
          resolve(line.slice(0, 3));
          return;
        }
      }
    });
    s.on('error', reject);
  });
}

export async function untrustedParsingRows(service: Child, smtpPort: number, log: (s: string) => void): Promise<Row[]> {
  const base = service.url;
  const headers = 'From: m@attacker.example\r\nTo: x@bench.test\r\nSubject: bench\r\n';
  const attacks: Attack[] = [
    {
      name: 'mail: 250 KB of spaces in a line',
      run: async () => smtpSend(smtpPort, (await createAddress(base)).email, Buffer.from(`${headers}\r\nHello${' '.repeat(250_000)}world\r\n`)),
    },
    {
      name: 'mail: 1.9 MB of bare LFs',
      run: async () => smtpSend(smtpPort, (await createAddress(base)).email, Buffer.from(`${headers}\r\n${'\n'.repeat(1_900_000)}`)),
    },
    {
      name: 'mail: 200 DKIM signatures over 2 MB',
      run: async () => {
        const sigs = Array.from(
          { length: 200 },
          (_, i) => `DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=attacker.example; s=s${i}; l=${1_000_000 + i}; h=from; bh=AAAA; b=AAAA\r\n`,
        ).join('');
        return smtpSend(smtpPort, (await createAddress(base)).email, Buffer.from(`${sigs}${headers}\r\n`.padEnd(2_000_000, `${'y'.repeat(998)}\r\n`)));
      },
    },
    {
      name: 'mail: 60,000 nested rfc822',
      run: async () =>
        smtpSend(
          smtpPort,
          (await createAddress(base)).email,
          Buffer.from(`${headers}Content-Type: message/rfc822\r\n\r\n${'Content-Type: message/rfc822\r\n\r\n'.repeat(60_000)}end\r\n`),
        ),
    },
    {
      name: 'capture: 80 KB form, one key',
      run: async () =>
        String(
          (
            await fetch((await createAddress(base)).hook, {
              method: 'POST',
              headers: { 'content-type': 'application/x-www-form-urlencoded' },
              body: Array(27_000).fill('k=v').join('&'),
            })
          ).status,
        ),
    },
    {
      name: 'query: 30 x 14 KB, one key',
      run: async () => {
        const q = Array(3500).fill('a=1').join('&');
        return [...new Set((await Promise.all(Array.from({ length: 30 }, () => fetch(`${base}/healthz?${q}`)))).map((r) => r.status))].join('/');
      },
    },
    {
      name: 'capture: Stripe-Signature 2,000 v1 over 8 MiB',
      run: async () => {
        const a = await createAddress(base);
        await fetch(`${base}/api/v1/addresses/${a.id}/signing-secrets`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
          body: '{"stripe":"whsec_bench"}',
        });
        const sig = `t=${Math.floor(Date.now() / 1000)},${Array.from({ length: 2000 }, (_, i) => `v1=${i.toString(36)}`).join(',')}`;
        const body = JSON.stringify({ id: 'evt_1', object: 'event', type: 'x', pad: 'p'.repeat(8 * 1024 * 1024) });
        return String((await fetch(a.hook, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': sig }, body })).status);
      },
    },
  ];
  const rssBefore = rssBytes(service.pid);
  let rssPeak = rssBefore;
  let slowest = 0;
  let slowestDuring = '';
  let running = true;
  let current = '';
  const probe = (async () => {
    while (running) {
      const t = performance.now();
      try {
        await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(120_000) });
      } catch {
        /* counted as slow */
      }
      const ms = performance.now() - t;
      if (ms > slowest) {
        slowest = ms;
        slowestDuring = current;
      }
      rssPeak = Math.max(rssPeak, rssBytes(service.pid));
      await sleep(20);
    }
  })();
  const answers: string[] = [];
  for (const attack of attacks) {
    current = attack.name;
    const t = performance.now();
    const answer = await attack.run().catch((err: Error) => `error ${err.message}`);
    answers.push(`${attack.name}: ${answer} in ${((performance.now() - t) / 1000).toFixed(2)} s`);
    log(`  ${answers.at(-1)}`);
  }
  running = false;
  await probe;
  const failed = answers.filter((a) => !/: (250|202|400)(\/400)? in/.test(a));
  return [
    {
      key: 'untrusted_loop_delay',
      label: 'Slowest /healthz while mail and parser attacks run',
      unit: 'ms',
      service: slowest,
      target: '< 1000 ms',
      met: slowest < 1000 && failed.length === 0,
      note: `worst during "${slowestDuring}"; ${answers.length} attacks, ${failed.length} not answered as expected${failed.length ? ` (${failed.join('; ')})` : ''}`,
    },
    {
      key: 'untrusted_rss',
      label: 'Peak RSS above idle during those attacks',
      unit: 'MB',
      service: (rssPeak - rssBefore) / 2 ** 20,
      target: 'reported',
      met: null,
      note: `${(rssBefore / 2 ** 20).toFixed(0)} MB before; the mail-parsing workers' heap is capped by MAIL_PARSE_MAX_HEAP_MB`,
    },
  ];
}
