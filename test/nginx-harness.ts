// nginx run for real in front of the service, for the tests of docs/deploy.md's configurations
// (test/deploy/nginx-proxy.test.ts): a scratch prefix with its own
// logs and temp paths, the site file edited only where the test must (ports, paths), `nginx -t`
// first. Loopback only.
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
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

/**
 * With the service down, a sender posting through the proxy (with and without a query) gets the
 * service's own shape: JSON 503 `unavailable` with Retry-After 5, as the guide's nginx and Caddy
 * configurations answer it, not the proxy's own 502 page.
 */
export async function sendersGetUnavailable(origin: string, inboxUrl: string): Promise<void> {
  for (const path of [new URL(inboxUrl).pathname, `${new URL(inboxUrl).pathname}?token=aa_read_x`]) {
    const r = await call(origin, 'POST', path, { json: { data: 'while down' } });
    assert.equal(r.status, 503, r.text);
    assert.match(String(r.headers['content-type']), /^application\/json/);
    assert.equal(r.headers['retry-after'], '5');
    const body = JSON.parse(r.text);
    assert.equal(body.error.code, 'unavailable');
    assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message']);
  }
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
  tempPaths(dir);
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
  ${tempPathDirectives(dir)}
${site}
}
`,
  );
  return startNginx(dir, conf, `http://127.0.0.1:${port}`);
}

function tempPaths(dir: string): void {
  for (const d of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, d), { recursive: true });
  chmodSync(dir, 0o755); // the workers (nobody or www-data, when the master runs as root) use the temp paths
}

function tempPathDirectives(dir: string): string {
  return `client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;`;
}

/** The commands of docs/deploy.md's nginx block that edit /etc/nginx/nginx.conf, `sudo` dropped. */
export function guideNginxConfCommands(): string[] {
  const guide = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
  const block = /### nginx\n\n```sh\n([\s\S]*?)\n```/.exec(guide)?.[1];
  assert.ok(block, 'docs/deploy.md has no ```sh block under "### nginx"');
  const commands = block
    .split('\n')
    .filter((l) => !l.startsWith('#') && l.includes('/etc/nginx/nginx.conf'))
    .map((l) => l.replaceAll('sudo ', ''));
  assert.ok(commands.length >= 2, `the guide's nginx.conf commands:\n${block}`);
  return commands;
}

/**
 * Debian's /etc/nginx/nginx.conf as the guide leaves it: copied, the guide's own commands run on
 * the copy (not a configuration written here), then only what a test must change: the pid file,
 * the logs and temp paths into `dir`, and the includes replaced by the one site file.
 */
export function guideNginxConf(dir: string, sitePath: string, extra: { mainErrorLog?: string } = {}): string {
  tempPaths(dir);
  const conf = join(dir, 'nginx.conf');
  copyFileSync('/etc/nginx/nginx.conf', conf);
  for (const command of guideNginxConfCommands()) {
    const r = spawnSync('sh', ['-c', command.replaceAll('/etc/nginx/nginx.conf', conf)], { encoding: 'utf8' });
    assert.equal(r.status, 0, `${command}: ${r.stderr}`);
  }
  let text = readFileSync(conf, 'utf8');
  text = edit(text, /^pid .*;$/m, `pid ${dir}/nginx.pid;`);
  text = edit(text, /^error_log \/var\/log\/nginx\/error\.log(.*);$/m, extra.mainErrorLog ?? `error_log ${dir}/error.log$1;`);
  text = edit(text, /^(\s*)access_log \/var\/log\/nginx\/access\.log;$/m, `$1access_log ${dir}/access.log;\n$1${tempPathDirectives(dir)}`);
  text = edit(text, /^(\s*)include \/etc\/nginx\/conf\.d\/\*\.conf;$/m, `$1include ${sitePath};`);
  text = edit(text, /^\s*include \/etc\/nginx\/sites-enabled\/\*;$/m, '');
  writeFileSync(conf, text);
  return conf;
}

/** deploy/nginx/return-address.conf with only ports, upstream, certificate and log paths changed. */
export function guideSite(dir: string, upstreamPort: number, httpPort: number, httpsPort: number): string {
  let site = readFileSync(join(ROOT, 'deploy/nginx/return-address.conf'), 'utf8');
  site = edit(site, 'server 127.0.0.1:3000;', `server 127.0.0.1:${upstreamPort};`);
  site = edit(site, /\n\s*listen \[::\]:80;/, '');
  site = edit(site, /\n\s*listen \[::\]:443 ssl;/, '');
  site = edit(site, 'listen 80;', `listen 127.0.0.1:${httpPort};`);
  site = edit(site, 'listen 443 ssl;', `listen 127.0.0.1:${httpsPort} ssl;`);
  site = edit(site, '/etc/letsencrypt/live/ra.example.com/fullchain.pem', join(FIXTURES, 'cert.pem'));
  site = edit(site, '/etc/letsencrypt/live/ra.example.com/privkey.pem', join(FIXTURES, 'key.pem'));
  return edit(site, '/var/log/nginx/', `${dir}/`);
}

export interface RunningNginx {
  stop(): Promise<void>;
  checked: string;
  /** The master's pid (its workers are its children). */
  pid: number;
  /** What nginx wrote on stderr (before its error_log is open, nginx writes there). */
  stderr(): string;
}

/** `nginx -t`, then nginx in the foreground on `conf`, ready once `probe` + /healthz answers at all. */
export async function startNginx(dir: string, conf: string, probe: string): Promise<RunningNginx> {
  // daemon off; given on the command line when the file does not say it (Debian's does not).
  const args = readFileSync(conf, 'utf8').includes('daemon off;') ? ['-p', dir, '-c', conf] : ['-p', dir, '-c', conf, '-g', 'daemon off;'];
  const test = spawnSync('nginx', ['-t', ...args], { encoding: 'utf8' });
  const checked = `${test.stdout}${test.stderr}`.trim(); // nginx -t reports on stderr
  assert.equal(test.status, 0, `nginx -t:\n${checked}`);
  console.log(`  nginx -t: ${checked.replaceAll(dir, '<tmp>').split('\n').join(' | ')}`);
  const proc = spawn('nginx', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  for (let i = 0; ; i++) {
    const up = await call(probe, 'GET', '/healthz').then(
      () => true,
      () => false,
    );
    if (up) break;
    assert.ok(i < 200 && proc.exitCode === null, `nginx did not start: ${err}`);
    await sleep(25);
  }
  return {
    checked,
    pid: proc.pid ?? 0,
    stderr: () => err,
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGQUIT');
      await exited;
    },
  };
}
