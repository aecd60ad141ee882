// The nginx configurations of docs/deploy.md, run for real in front of a real service
// (deploy/nginx/return-address.conf with TLS, deploy/nginx/compose-postgres.conf over HTTP): the
// URLs a create hands out carry the public origin and work through the proxy, long-polls and event
// streams pass at once (no buffering), and the access log holds no inbox secret, no read token
// and no query. Skipped, with the reason, where nginx is not installed (.ci/run installs it).
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createTestStorage, freePort, type SpawnedService, STORE, sleep, spawnService } from '../helpers.js';
import { call, edit, guideSite, nginxMissing, ROOT, runNginx, sendersGetUnavailable } from '../nginx-harness.js';

async function exercise(origin: string, svc: SpawnedService, accessLog: string): Promise<string> {
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
  // Woken by the delivery, not by the 20 s wait's end (half of it is the bound: a busy machine must not fail this).
  assert.ok(performance.now() - t0 < 10_000, `the long-poll answered ${Math.round(performance.now() - t0)} ms after the delivery`);

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
  // Waited for as a condition; the bound is for a proxy that buffers the stream (it would hold the
  // event until the response ends, which only the DELETE below does), not a speed claim.
  while (!streamed.includes('"type":"second"') && performance.now() - t1 < 10_000) await sleep(25);
  assert.match(streamed, /id: 2\nevent: event\ndata: \{.*"type":"second"/, 'the streamed event passed the proxy unbuffered');
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
  return bInbox;
}

/**
 * With the service stopped, a sender gets the service's own shape through nginx: JSON 503 with
 * Retry-After, not nginx's HTML 502; and neither log, at any level, holds the secret of the URL
 * that failed (nginx's error lines quote the request line).
 */
async function upstreamDown(origin: string, svc: SpawnedService, inboxUrl: string, dir: string): Promise<void> {
  svc.proc.kill('SIGTERM');
  await svc.exited;
  const secret = inboxUrl.slice(inboxUrl.lastIndexOf('/') + 1);
  await sendersGetUnavailable(origin, inboxUrl);
  await sleep(100);
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.log'))) {
    const text = readFileSync(join(dir, name), 'utf8');
    assert.ok(!text.includes(secret) && !text.includes('aa_ingress_') && !text.includes('aa_read_'), `${name} holds a credential:\n${text}`);
  }
  assert.match(readFileSync(join(dir, 'return-address.access.log'), 'utf8'), /"POST \/api\/v1\/inbox\/addr_\w+\/\[REDACTED\] HTTP\/1\.1" 503 .* upstream=502/);
}

describe(`nginx in front of the service (${STORE})`, { skip: nginxMissing(), timeout: 300_000 }, () => {
  it('deploy/nginx/return-address.conf: TLS, public URLs, long-polls and SSE pass, a secret-free access log', { timeout: 90_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ra-nginx-'));
    const storage = await createTestStorage();
    const httpsPort = await freePort();
    const httpPort = await freePort();
    const origin = `https://127.0.0.1:${httpsPort}`;
    const svc = await spawnService({ BASE_URL: origin, TRUST_PROXY: '1' }, storage);
    try {
      const site = guideSite(dir, svc.port, httpPort, httpsPort);
      const nginx = await runNginx(dir, site, httpPort);
      try {
        const redirect = await call(`http://127.0.0.1:${httpPort}`, 'GET', '/api/v1/addresses');
        assert.equal(redirect.status, 301);
        const inbox = await exercise(origin, svc, join(dir, 'return-address.access.log'));
        await upstreamDown(origin, svc, inbox, dir);
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
        const inbox = await exercise(origin, svc, join(dir, 'return-address.access.log'));
        await upstreamDown(origin, svc, inbox, dir);
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
