// Readiness follows PostgreSQL's return within a probe, and an outage writes a few counted warnings,
// not one per request. The database is not stopped (a shared machine): the service reaches it
// through a TCP proxy in this test, which is cut (every connection dropped, new ones refused) and
// restored. A liveness probe runs beside the outage.
import assert from 'node:assert/strict';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import {
  api,
  createAddress,
  createTestStorage,
  deliver,
  freePort,
  onlyPostgres,
  type Res,
  sleep,
  startTestService,
  type TestService,
  type TestStorage,
} from '../helpers.js';
import { LIVENESS_MS, startLivenessProbe } from '../liveness-probe.js';
import { call, openPush } from '../mcp/mcp-modern-client.js';

/** A TCP proxy to 127.0.0.1:5432 that can be cut and restored. */
async function pgProxy(): Promise<{ port: number; cut(): void; restore(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let open = true;
  const server: Server = createServer((client) => {
    if (!open) return void client.destroy();
    const upstream = connect(5432, '127.0.0.1');
    sockets.add(client).add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream).pipe(client);
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    port,
    cut() {
      open = false;
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
    restore() {
      open = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

describe('readiness and warnings through a PostgreSQL outage', { skip: onlyPostgres && 'needs STORE=postgres: the outage is of a PostgreSQL server' }, () => {
  let storage: TestStorage;
  let proxy: Awaited<ReturnType<typeof pgProxy>>;
  let svc: TestService;
  const lines: { msg: string; repeated?: number }[] = [];
  let probe: ReturnType<typeof startLivenessProbe> | undefined;
  before(async () => {
    storage = await createTestStorage();
    proxy = await pgProxy();
    const url = new URL(storage.databaseUrl!);
    url.port = String(proxy.port);
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l));
        done();
      },
    });
    const logger = pino({ level: 'warn' }, sink) as unknown as FastifyBaseLogger;
    svc = await startTestService(
      { DATABASE_URL: url.toString(), PG_STATEMENT_TIMEOUT_MS: '2000' },
      { ...storage, env: { ...storage.env, DATABASE_URL: url.toString() } },
      { logger },
    );
  });
  after(async () => {
    await probe?.stop();
    proxy.restore();
    await svc.stop({ keepStorage: true });
    await proxy.close();
    await storage.drop();
  });

  it('503s while cut, a few counted warnings, and /readyz 200 within a probe of the return', { timeout: 90_000 }, async () => {
    const a = await createAddress(svc.baseUrl);
    assert.equal((await api(svc.baseUrl, 'GET', '/readyz')).status, 200);
    probe = startLivenessProbe(svc.baseUrl);
    proxy.cut();
    // Requests while the database is away: each is 503 with Retry-After, or at worst a 5xx; none hangs.
    let refused = 0;
    const until = Date.now() + 4_000;
    while (Date.now() < until) {
      const answers = await Promise.all(Array.from({ length: 10 }, () => deliver(svc.baseUrl, a, { data: 1 })));
      for (const r of answers) {
        if (r.status === 503) {
          refused++;
          assert.ok(r.headers.get('retry-after'), 'a 503 says Retry-After');
        }
      }
    }
    assert.ok(refused >= 20, `deliveries were refused while the database was away (${refused})`);
    let down = await api(svc.baseUrl, 'GET', '/readyz');
    for (let i = 0; i < 50 && down.status === 200; i++) {
      await sleep(100);
      down = await api(svc.baseUrl, 'GET', '/readyz');
    }
    assert.equal(down.status, 503);
    // The LISTEN connection's backoff grows while it is away: wait past the listener's own 10 s bound.
    await sleep(11_000);
    const warnings = lines.filter((l) => l.msg === 'request failed: the store is unavailable');
    assert.ok(warnings.length >= 1, 'the outage is logged');
    assert.ok(warnings.length <= 4, `${warnings.length} warnings for ${refused} refused requests: one per interval`);
    assert.ok(warnings.some((w) => (w.repeated ?? 0) > 0) || warnings.length === 1, 'a later warning counts the ones left out');

    // Refused writes just before the return: readiness must not wait out a window after them.
    const last = await Promise.all(Array.from({ length: 5 }, () => deliver(svc.baseUrl, a, { data: 1 })));
    assert.ok(last.every((r) => r.status >= 500));
    proxy.restore();
    const back = performance.now();
    let ready = await api(svc.baseUrl, 'GET', '/readyz');
    while (ready.status !== 200 && performance.now() - back < 15_000) {
      await sleep(50);
      ready = await api(svc.baseUrl, 'GET', '/readyz');
    }
    const ms = performance.now() - back;
    assert.equal(ready.status, 200, ready.text);
    // Was ~10 s (the refused-write window and the listener's backoff); a busy machine may add a little to a second.
    assert.ok(ms < 3_000, `/readyz followed the return in ${Math.round(ms)} ms`);
    process.stderr.write(`# readyz 200 ${Math.round(ms)} ms after the database came back\n`);
    assert.equal((await deliver(svc.baseUrl, a, { data: 2 })).status, 202);
    const { maxMs, failures } = await probe.stop();
    probe = undefined;
    assert.deepEqual(failures, []);
    assert.ok(maxMs < LIVENESS_MS, `healthz answered within ${LIVENESS_MS} ms (slowest ${maxMs} ms)`);
  });

  it('over MCP an outage is "unavailable, retry after 5 s" (503 with Retry-After; an open events/stream ends saying so), never -32603 Internal error', {
    timeout: 60_000,
  }, async () => {
    const a = await createAddress(svc.baseUrl);
    const poll = { name: 'return_address.event', arguments: {}, cursor: null };
    assert.equal((await call(a.mcpUrl, a.token, 'events/poll', poll)).status, 200);
    const stream = await openPush(a.mcpUrl, a.token, { name: 'return_address.event', arguments: {}, cursor: null, heartbeatMs: 1000 });
    assert.equal(stream.status, 200);
    proxy.cut();
    try {
      // Whether the token check (an API error body) or the method itself (a JSON-RPC error) met the
      // outage, the answer is 503 with Retry-After and the code unavailable.
      const unavailable = (r: Res) => {
        assert.equal(r.status, 503, r.text);
        assert.equal(r.headers.get('retry-after'), '5');
        const code = r.json.jsonrpc === '2.0' ? r.json.error.data.code : r.json.error.code;
        assert.equal(code, 'unavailable', r.text);
      };
      unavailable(await call(a.mcpUrl, a.token, 'events/poll', poll));
      unavailable(await call(a.mcpUrl, a.token, 'tools/call', { name: 'list_events', arguments: {} }));
      const ended = await stream.next((m) => m.method === 'notifications/events/error', 30_000);
      assert.equal(ended.params.error.data.code, 'unavailable', JSON.stringify(ended));
      assert.equal(ended.params.error.data.retryAfterSeconds, 5);
      await stream.ended;
    } finally {
      stream.close();
      proxy.restore();
    }
    let back = await call(a.mcpUrl, a.token, 'events/poll', poll);
    for (let i = 0; i < 100 && back.status !== 200; i++) {
      await sleep(100);
      back = await call(a.mcpUrl, a.token, 'events/poll', poll);
    }
    assert.equal(back.status, 200, back.text);
  });
});
