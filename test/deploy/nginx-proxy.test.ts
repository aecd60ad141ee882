// The nginx configurations of docs/deploy.md, run for real in front of a real service
// (deploy/nginx/return-address.conf with TLS, deploy/nginx/compose-postgres.conf over HTTP): the
// URLs a create hands out carry the public origin and work through the proxy, long-polls and event
// streams pass at once (no buffering), and the access log holds no inbox secret, no read token
// and no query. Skipped, with the reason, where nginx is not installed (.ci/run installs it).
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createTestStorage, freePort, type SpawnedService, STORE, sleep, spawnService } from '../helpers.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const FIXTURES = join(ROOT, 'test/fixtures/tls');

function nginxMissing(): string | false {
  try {
    execFileSync('nginx', ['-v'], { stdio: 'ignore' });
    return false;
  } catch {
    return 'nginx is not installed (apt-get install -y nginx; .ci/run installs it)';
  }
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

function call(origin: string, method: string, path: string, opts: { token?: string; json?: unknown; onData?: (chunk: string) => void } = {}): Promise<Answer> {
  const url = new URL(/^https?:/.test(path) ? path : origin + path);
  const body = opts.json === undefined ? undefined : JSON.stringify(opts.json);
  const headers: Record<string, string> = {};
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    // The test's self-signed certificate (test/fixtures/tls) is not trusted: skip verification.
    const req = request(url, { method, headers, rejectUnauthorized: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        text += c;
        opts.onData?.(c);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Replaces `from` with `to` in a configuration, failing loudly when the file no longer has it. */
function edit(conf: string, from: string | RegExp, to: string): string {
  assert.ok(typeof from === 'string' ? conf.includes(from) : from.test(conf), `the nginx configuration no longer contains ${from}`);
  return typeof from === 'string' ? conf.split(from).join(to) : conf.replace(from, to);
}

async function runNginx(dir: string, site: string, port: number): Promise<{ stop(): Promise<void>; checked: string }> {
  for (const d of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, d));
  chmodSync(dir, 0o755); // the workers (nobody, when the master runs as root) use the temp paths
  const conf = join(dir, 'nginx.conf');
  writeFileSync(
    conf,
    `daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/nginx-error.log warn;
events { worker_connections 512; }
http {
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
${site}
}
`,
  );
  const test = spawnSync('nginx', ['-t', '-p', dir, '-c', conf], { encoding: 'utf8' });
  const checked = `${test.stdout}${test.stderr}`.trim(); // nginx -t reports on stderr
  assert.equal(test.status, 0, `nginx -t:\n${checked}`);
  console.log(`  nginx -t: ${checked.replaceAll(dir, '<tmp>').split('\n').join(' | ')}`);
  const proc = spawn('nginx', ['-p', dir, '-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  for (let i = 0; ; i++) {
    const up = await call(`http://127.0.0.1:${port}`, 'GET', '/healthz').then(
      () => true,
      () => false,
    );
    if (up) break;
    assert.ok(i < 200 && proc.exitCode === null, `nginx did not start: ${err}`);
    await sleep(25);
  }
  return {
    checked,
    stop: async () => {
      proc.kill('SIGQUIT');
      await exited;
    },
  };
}

async function exercise(origin: string, svc: SpawnedService, accessLog: string): Promise<void> {
  // Create through the proxy: every URL handed out names the public origin, and works there.
  const created = await call(origin, 'POST', '/api/v1/addresses', { json: { name: 'behind nginx' } });
  assert.equal(created.status, 201, created.text);
  const body = JSON.parse(created.text);
  const id: string = body.address.id;
  const token: string = body.credentials.read_token;
  const inboxUrl: string = body.endpoints.inbox_url;
  const secret = inboxUrl.slice(inboxUrl.lastIndexOf('/') + 1);
  for (const [name, url] of Object.entries(body.endpoints as Record<string, string>)) {
    if (typeof url === 'string' && /^https?:/.test(url)) assert.ok(url.startsWith(`${origin}/`), `${name} ${url} carries the public origin ${origin}`);
  }

  // A long-poll through the proxy is answered as soon as the event is stored.
  const poll = call(origin, 'GET', `/api/v1/addresses/${id}/events?wait=20`, { token });
  await sleep(500);
  const t0 = performance.now();
  const delivered = await call(origin, 'POST', inboxUrl, { json: { type: 'first', data: { n: 1 } } });
  assert.equal(delivered.status, 202, delivered.text);
  const page = JSON.parse((await poll).text);
  assert.equal(page.events[0]?.type, 'first');
  assert.ok(performance.now() - t0 < 2000, `the long-poll answered ${Math.round(performance.now() - t0)} ms after the delivery`);

  // An event stream through the proxy: the event arrives while the response is still open.
  let streamed = '';
  const stream = call(origin, 'GET', `/api/v1/addresses/${id}/events/stream?after=1`, {
    token,
    onData: (c) => {
      streamed += c;
    },
  });
  await sleep(300);
  const t1 = performance.now();
  assert.equal((await call(origin, 'POST', inboxUrl, { json: { type: 'second', data: { n: 2 } } })).status, 202);
  for (let i = 0; i < 80 && !streamed.includes('"type":"second"'); i++) await sleep(25);
  assert.match(streamed, /id: 2\nevent: event\ndata: \{.*"type":"second"/, 'the streamed event passed the proxy unbuffered');
  assert.ok(performance.now() - t1 < 2000);
  assert.equal((await call(origin, 'DELETE', `/api/v1/addresses/${id}`, { token })).status, 204); // ends the stream
  await stream;

  // What must not reach the log: the inbox secret however spelt, a capture URL's secret and its
  // OAuth code, a read token in a query.
  const again = await call(origin, 'POST', '/api/v1/addresses', { json: {} });
  const b = JSON.parse(again.text);
  const bInbox: string = b.endpoints.inbox_url;
  const bSecret = bInbox.slice(bInbox.lastIndexOf('/') + 1);
  const bPath = new URL(bInbox).pathname;
  await call(origin, 'POST', bPath.replace('/inbox/', '/%69nbox/'), { json: { data: 'encoded' } });
  await call(origin, 'POST', `/${bPath}`, { json: { data: 'double slash' } });
  await call(origin, 'GET', `${bPath.replace('/inbox/', '/hooks/')}/oauth?code=OAUTHCODE4711&state=s`);
  await call(origin, 'GET', `/api/v1/addresses/${b.address.id}/events?token=${b.credentials.read_token}`);
  await call(origin, 'GET', `/nowhere/${b.credentials.read_token}`);
  await sleep(100);

  const log = readFileSync(accessLog, 'utf8');
  for (const [what, value] of [
    ['inbox secret', secret],
    ['second inbox secret', bSecret],
    ['read token', token],
    ['second read token', b.credentials.read_token],
    ['OAuth code', 'OAUTHCODE4711'],
  ]) {
    assert.ok(!log.includes(value as string), `the access log holds the ${what}:\n${log}`);
  }
  assert.doesNotMatch(log, /\?/, 'no query in the access log');
  assert.match(log, new RegExp(`"POST /api/v1/inbox/${id}/\\[REDACTED\\] HTTP/1\\.1" 202`));
  assert.match(log, new RegExp(`"GET /api/v1/hooks/${b.address.id}/\\[REDACTED\\]/oauth HTTP/1\\.1"`));
  assert.match(log, new RegExp(`"GET /api/v1/addresses/${id}/events/stream HTTP/1\\.1" 200`));
  assert.match(log, /"GET \[REDACTED: credential in the path\] HTTP\/1\.1" 404/);
  console.log(
    `  access log (${STORE}, ${origin}):\n${log
      .trim()
      .split('\n')
      .map((l) => `    ${l}`)
      .join('\n')}`,
  );
  assert.ok(svc.proc.exitCode === null, 'the service is still up');
}

describe(`nginx in front of the service (${STORE})`, { skip: nginxMissing() }, () => {
  it('deploy/nginx/return-address.conf: TLS, public URLs, long-polls and SSE pass, a secret-free access log', { timeout: 90_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ra-nginx-'));
    const storage = await createTestStorage();
    const httpsPort = await freePort();
    const httpPort = await freePort();
    const origin = `https://127.0.0.1:${httpsPort}`;
    const svc = await spawnService({ BASE_URL: origin, TRUST_PROXY: '1' }, storage);
    try {
      let site = readFileSync(join(ROOT, 'deploy/nginx/return-address.conf'), 'utf8');
      site = edit(site, 'server 127.0.0.1:3000;', `server 127.0.0.1:${svc.port};`);
      site = edit(site, /\n\s*listen \[::\]:80;/, '');
      site = edit(site, /\n\s*listen \[::\]:443 ssl;/, '');
      site = edit(site, 'listen 80;', `listen 127.0.0.1:${httpPort};`);
      site = edit(site, 'listen 443 ssl;', `listen 127.0.0.1:${httpsPort} ssl;`);
      site = edit(site, '/etc/letsencrypt/live/ra.example.com/fullchain.pem', join(FIXTURES, 'cert.pem'));
      site = edit(site, '/etc/letsencrypt/live/ra.example.com/privkey.pem', join(FIXTURES, 'key.pem'));
      site = edit(site, '/var/log/nginx/', `${dir}/`);
      const nginx = await runNginx(dir, site, httpPort);
      try {
        const redirect = await call(`http://127.0.0.1:${httpPort}`, 'GET', '/api/v1/addresses');
        assert.equal(redirect.status, 301);
        await exercise(origin, svc, join(dir, 'return-address.access.log'));
      } finally {
        await nginx.stop();
      }
    } finally {
      svc.proc.kill('SIGTERM');
      await svc.exited;
      await storage.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('deploy/nginx/compose-postgres.conf: the same over two upstreams', { timeout: 90_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ra-nginx-'));
    const storage = await createTestStorage();
    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    const svc = await spawnService({ BASE_URL: origin, TRUST_PROXY: '1' }, storage);
    try {
      let site = readFileSync(join(ROOT, 'deploy/nginx/compose-postgres.conf'), 'utf8');
      // Both upstreams name this one service: the file is run as written, only the addresses change.
      site = edit(site, 'server ra1:3000;', `server 127.0.0.1:${svc.port};`);
      site = edit(site, 'server ra2:3000;', `server 127.0.0.1:${svc.port};`);
      site = edit(site, 'listen 80;', `listen 127.0.0.1:${port};`);
      site = edit(site, '/var/log/nginx/', `${dir}/`);
      const nginx = await runNginx(dir, site, port);
      try {
        await exercise(origin, svc, join(dir, 'return-address.access.log'));
      } finally {
        await nginx.stop();
      }
    } finally {
      svc.proc.kill('SIGTERM');
      await svc.exited;
      await storage.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
