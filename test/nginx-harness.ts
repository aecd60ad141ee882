// nginx run for real in front of the service, for the tests of docs/deploy.md's configurations
// (test/deploy/nginx-proxy.test.ts): a scratch prefix with its own
// logs and temp paths, the site file edited only where the test must (ports, paths), `nginx -t`
// first. Loopback only.
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { type Agent, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sleep } from './helpers.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const FIXTURES = join(ROOT, 'test/fixtures/tls');

export function nginxMissing(): string | false {
  try {
    execFileSync('nginx', ['-v'], { stdio: 'ignore' });
    return false;
  } catch {
    return 'nginx is not installed (apt-get install -y nginx; .ci/run installs it)';
  }
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

export function call(
  origin: string,
  method: string,
  path: string,
  opts: { token?: string; json?: unknown; onData?: (chunk: string) => void; agent?: Agent } = {},
): Promise<Answer> {
  const url = new URL(/^https?:/.test(path) ? path : origin + path);
  const body = opts.json === undefined ? undefined : JSON.stringify(opts.json);
  const headers: Record<string, string> = {};
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    // The test's self-signed certificate (test/fixtures/tls) is not trusted: skip verification.
    const req = request(url, { method, headers, rejectUnauthorized: false, ...(opts.agent ? { agent: opts.agent } : {}) }, (res) => {
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
export function edit(conf: string, from: string | RegExp, to: string): string {
  assert.ok(typeof from === 'string' ? conf.includes(from) : from.test(conf), `the nginx configuration no longer contains ${from}`);
  return typeof from === 'string' ? conf.split(from).join(to) : conf.replace(from, to);
}

export async function runNginx(
  dir: string,
  site: string,
  port: number,
  /** nginx.conf's main and events contexts (the guide's for many waiters, or a small one to overload). */
  top: { main?: string; events?: string } = {},
): Promise<{ stop(): Promise<void>; checked: string }> {
  for (const d of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, d));
  chmodSync(dir, 0o755); // the workers (nobody, when the master runs as root) use the temp paths
  const conf = join(dir, 'nginx.conf');
  writeFileSync(
    conf,
    `daemon off;
worker_processes 1;
${top.main ?? ''}
pid ${dir}/nginx.pid;
error_log ${dir}/nginx-error.log warn;
events { ${top.events ?? 'worker_connections 512;'} }
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
