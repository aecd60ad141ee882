// The Python module's forward, the same replay as the TypeScript client's:
// its CLI verb against the real service and a real local handler: an exact GitHub replay verified
// with the original secret, a --resign verified with a local secret, a 500 retried in order, a
// SIGKILL and restart that loses nothing, and ReturnAddress.forward() called as a function.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Addr, api, createAddress, deliver, startTestService, type TestService } from '../helpers.js';
import { type LocalHandler, type Received, startLocalHandler } from './local-handler.js';

const hasPython = spawnSync('python3', ['--version']).status === 0;
const hmacHex = (secret: string, body: Buffer | string) => createHmac('sha256', secret).update(body).digest('hex');
const seqOf = (r: Received) => Number(r.headers['x-return-address-sequence']);

function savedFile(a: Addr): string {
  const file = join(mkdtempSync(join(tmpdir(), 'ra-pyforward-')), 'a.json');
  writeFileSync(file, JSON.stringify({ ...a.body, cursor: 0 }), { mode: 0o600 });
  return file;
}

function python(args: string[], env: Record<string, string>) {
  const proc = spawn('python3', args, { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  const waiters = new Set<() => void>();
  proc.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    for (const w of waiters) w();
  });
  proc.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.on('close', (code, signal) => resolve({ code, signal })));
  const lines = (re: RegExp, n: number) =>
    new Promise<string[]>((resolve, reject) => {
      const check = () => {
        const found = stderr.split('\n').filter((l) => re.test(l));
        if (found.length >= n) {
          waiters.delete(check);
          clearTimeout(timer);
          resolve(found);
        }
      };
      const timer = setTimeout(() => reject(new Error(`timed out; stderr:\n${stderr}\nstdout:\n${stdout}`)), 60_000);
      waiters.add(check);
      check();
    });
  return { proc, done, lines, stderr: () => stderr, stdout: () => stdout };
}

describe('Python forward', { skip: hasPython ? false : 'python3 is not installed' }, () => {
  let svc: TestService;
  const handlers: LocalHandler[] = [];
  before(async () => {
    svc = await startTestService();
  });
  after(async () => {
    for (const h of handlers) await h.close();
    await svc.stop();
  });

  it('the forward verb: exact GitHub replay, 500 retried in order, SIGKILL and restart lose nothing, --resign verifies locally', async () => {
    const a = await createAddress(svc.baseUrl);
    const file = savedFile(a);
    const secret = 'py-original';
    // The provider's secret is set, so the capture verifies and --resign may sign it again.
    const set = await api(svc.baseUrl, 'PUT', `/api/v1/addresses/${a.id}/signing-secrets`, { token: a.token, json: { github: secret } });
    assert.equal(set.status, 200, set.text);
    const body = `{"action":"closed","id":12345678901234567890,"delivery":"${randomUUID()}"}`;
    await api(svc.baseUrl, 'POST', `${a.body.endpoints.hook_url}/gh?x=1`, {
      body,
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'issues',
        'x-github-delivery': randomUUID(),
        'x-hub-signature-256': `sha256=${hmacHex(secret, body)}`,
      },
    });
    await deliver(svc.baseUrl, a, { type: 'job', data: { n: 2 } });
    const h = await startLocalHandler((r, i) =>
      i === 1 ? 500 : r.headers['x-github-event'] === undefined || r.headers['x-hub-signature-256'] === `sha256=${hmacHex(secret, r.body)}` ? 200 : 401,
    );
    handlers.push(h);
    const env = { RETURN_ADDRESS_URL: svc.baseUrl };
    const first = python(['clients/python/return_address.py', 'forward', '--save', file, '--to', `${h.url}/in`], env);
    const l = await first.lines(/^forward 200 /, 2);
    assert.match(l[0]!, /^forward 200 POST \/gh github\.issues seq=1 \d+ms -> http:\/\/127\.0\.0\.1:\d+\/in$/);
    assert.match(first.stderr(), /^forward 500 POST \/in job seq=2 \d+ms -> .*; retry in 1s$/m);
    assert.equal(h.received[0]!.url, '/in/gh?x=1');
    assert.equal(h.received[0]!.body.toString(), body, 'byte-identical');
    first.proc.kill('SIGKILL');
    assert.equal((await first.done).signal, 'SIGKILL');
    for (const n of [3, 4]) await deliver(svc.baseUrl, a, { type: 'job', data: { n } });
    const second = python(['clients/python/return_address.py', 'forward', '--save', file, '--to', `${h.url}/in`], env);
    await second.lines(/^forward 200 .* seq=4 /, 1);
    second.proc.kill('SIGINT');
    const stopped = await second.done;
    assert.equal(stopped.code, 0, second.stderr());
    assert.match(second.stderr(), /forward: stopped/);
    const seqs = h.received.map((r) => (r.headers['x-github-event'] ? 1 : seqOf(r)));
    const distinct = seqs.filter((s, i) => i === 0 || s !== seqs[i - 1]);
    assert.deepEqual(distinct, [1, 2, 3, 4], `received ${seqs}`);

    const r = await startLocalHandler((req) => (req.headers['x-hub-signature-256'] === `sha256=${hmacHex('py-local', req.body)}` ? 200 : 401));
    handlers.push(r);
    const resigned = python(
      [
        'clients/python/return_address.py',
        'forward',
        '--save',
        file,
        '--to',
        r.url,
        '--from-sequence',
        '1',
        '--resign',
        'github:py-local',
        '--type',
        'github.*',
      ],
      env,
    );
    await resigned.lines(/^forward 200 .* seq=1 /, 1);
    resigned.proc.kill('SIGINT');
    assert.equal((await resigned.done).code, 0);
    assert.equal(r.received.length, 1);
    assert.equal(r.received[0]!.body.toString(), body);

    // The inbox URL's events verified nothing: --resign skips them, saying why, and moves on.
    const skipped = python(
      ['clients/python/return_address.py', 'forward', '--save', file, '--to', `${r.url}/jobs`, '--resign', 'github:py-local', '--type', 'job'],
      env,
    );
    const lines = await skipped.lines(/^forward SKIP job seq=4 /, 1);
    skipped.proc.kill('SIGINT');
    assert.equal((await skipped.done).code, 0);
    assert.match(lines[0]!, /not re-signed: inbox event unverified \(nothing was checked\)/);
    assert.match(skipped.stderr(), /^forward SKIP job seq=2 -> .*: not re-signed: inbox event/m);
    assert.equal(r.received.length, 1, 'no forged-able event reached the handler signed');
  });

  it('ReturnAddress.forward() as a function, with a Standard Webhooks re-signature', async () => {
    const a = await createAddress(svc.baseUrl);
    const file = savedFile(a);
    const swBody = '{"type":"user.created","data":{"id":"u_1"}}';
    await api(svc.baseUrl, 'POST', a.body.endpoints.hook_url, {
      body: swBody,
      headers: { 'content-type': 'application/json', 'webhook-id': 'msg_py', 'webhook-timestamp': '1000', 'webhook-signature': 'v1,AAAA' },
    });
    const h = await startLocalHandler();
    handlers.push(h);
    const key = `whsec_${Buffer.from('python standard webhooks key').toString('base64')}`;
    const script = [
      'import sys, json, threading; sys.path.insert(0, "clients/python")',
      'from return_address import ReturnAddress',
      `ra = ReturnAddress.from_created(json.load(open(${JSON.stringify(file)})), ${JSON.stringify(svc.baseUrl)})`,
      'stop = threading.Event()',
      'seen = []',
      'def on_attempt(a):',
      '    seen.append(a); stop.set()',
      `ra.forward([{"url": ${JSON.stringify(h.url)}}], resign=${JSON.stringify(`standard_webhooks:${key}`)}, resign_unverified=True, stop=stop, on_attempt=on_attempt)`,
      'print(json.dumps(seen))',
    ].join('\n');
    const p = python(['-c', script], {});
    const done = await p.done;
    assert.equal(done.code, 0, p.stderr());
    assert.equal(JSON.parse(p.stdout())[0].status, 200);
    const got = h.received[0]!;
    const { Webhook } = await import('standardwebhooks');
    new Webhook(key).verify(got.body.toString(), {
      'webhook-id': String(got.headers['webhook-id']),
      'webhook-timestamp': String(got.headers['webhook-timestamp']),
      'webhook-signature': String(got.headers['webhook-signature']),
    });
    assert.equal(got.headers['webhook-id'], 'msg_py');
  });
});
