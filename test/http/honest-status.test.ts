// Honest status (design.md, "Bounded work"): a store that cannot write answers 503 `unavailable`
// with Retry-After, never 500, and /readyz is not ok while it cannot write. Real failures, no mocks:
// SQLite on a real full disk (a small tmpfs mounted for the test; needs root, else skipped), and
// PostgreSQL reached through a TCP proxy the test cuts and restores.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { api, createAddress, createTestStorage, onlyPostgres, onlySqlite, sleep, startTestService, type TestStorage } from '../helpers.js';
import { LIVENESS_MS, startLivenessProbe } from '../liveness-probe.js';

function canMount(): boolean {
  const dir = mkdtempSync(join(tmpdir(), 'ra-mount-probe-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir], { stdio: 'ignore' });
    execFileSync('umount', [dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Writes a file until the disk is full (ENOSPC). */
function fillDisk(path: string): void {
  const fd = openSync(path, 'w');
  const chunk = Buffer.alloc(256 * 1024, 7);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    closeSync(fd);
  }
}

async function eventually(what: string, check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

describe('honest status: SQLite on a full disk', { skip: onlySqlite || (canMount() ? false : 'needs root to mount a small tmpfs') }, () => {
  const mnt = mkdtempSync(join(tmpdir(), 'ra-full-disk-'));
  after(() => {
    try {
      execFileSync('umount', [mnt], { stdio: 'ignore' });
    } catch {
      /* not mounted */
    }
    rmSync(mnt, { recursive: true, force: true });
  });

  it('writes answer 503 unavailable with Retry-After (not 500) and /readyz is 503 until there is room again', { timeout: 90_000 }, async () => {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=48m', 'tmpfs', mnt]);
    const storage: TestStorage = { env: { DATA_DIR: mnt }, dataDir: mnt, databaseUrl: undefined, drop: async () => {} };
    const svc = await startTestService({}, storage);
    try {
      const a = await createAddress(svc.baseUrl);
      assert.equal((await api(svc.baseUrl, 'GET', '/readyz')).status, 200);
      const filler = join(mnt, 'filler');
      fillDisk(filler);
      const probe = startLivenessProbe(svc.baseUrl);
      let refused: Awaited<ReturnType<typeof api>> | undefined;
      for (let i = 0; i < 200 && !refused; i++) {
        const r = await api(svc.baseUrl, 'POST', a.inboxUrl, { json: { data: { pad: 'x'.repeat(200_000), i } } });
        assert.ok(r.status === 202 || r.status === 503, `a write on a full disk is 202 or 503, never ${r.status}: ${r.text}`);
        if (r.status === 503) refused = r;
      }
      const live = await probe.stop();
      assert.ok(refused, 'the full disk refused a write');
      assert.equal(refused.json.error.code, 'unavailable');
      assert.equal(refused.headers.get('retry-after'), '5');
      const ready = await api(svc.baseUrl, 'GET', '/readyz');
      assert.equal(ready.status, 503, ready.text);
      assert.equal(ready.json.error.code, 'unavailable');
      assert.ok(ready.headers.get('retry-after'));
      assert.ok(live.maxMs < LIVENESS_MS, `healthz stayed answered: ${JSON.stringify(live)}`);

      unlinkSync(filler);
      await eventually('readiness after the disk has room again', async () => (await api(svc.baseUrl, 'GET', '/readyz')).status === 200);
      assert.equal((await api(svc.baseUrl, 'POST', a.inboxUrl, { json: { data: 'after' } })).status, 202);
    } finally {
      await svc.stop({ keepStorage: true });
    }
  });
});

/** A TCP proxy to PostgreSQL that the test can cut (every connection dropped, new ones refused) and restore. */
function pgProxy(target: { host: string; port: number }) {
  const sockets = new Set<Socket>();
  let cut = false;
  const server = createServer((client) => {
    if (cut) return void client.destroy();
    const upstream = connect(target);
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
  return {
    listen: () => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port))),
    cut() {
      cut = true;
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
    restore() {
      cut = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

describe('honest status: PostgreSQL unreachable', { skip: onlyPostgres }, () => {
  it('deliveries and reads answer 503 unavailable with Retry-After (not 500); /readyz is 503; both recover', { timeout: 90_000 }, async () => {
    const storage = await createTestStorage();
    const real = new URL(storage.databaseUrl!);
    const proxy = pgProxy({ host: real.hostname, port: Number(real.port || 5432) });
    const port = await proxy.listen();
    const viaProxy = new URL(real);
    viaProxy.port = String(port);
    const svc = await startTestService({ DATABASE_URL: viaProxy.toString() }, { ...storage, env: { ...storage.env, DATABASE_URL: viaProxy.toString() } });
    try {
      const a = await createAddress(svc.baseUrl);
      assert.equal((await api(svc.baseUrl, 'POST', a.inboxUrl, { json: { data: 1 } })).status, 202);
      proxy.cut();
      const probe = startLivenessProbe(svc.baseUrl);
      const delivery = await api(svc.baseUrl, 'POST', a.inboxUrl, { json: { data: 2 } });
      const read = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events`, { token: a.token });
      const created = await api(svc.baseUrl, 'POST', '/api/v1/addresses', { json: {} });
      const ready = await api(svc.baseUrl, 'GET', '/readyz');
      const live = await probe.stop();
      for (const [what, r] of [
        ['delivery', delivery],
        ['read', read],
        ['create', created],
        ['readyz', ready],
      ] as const) {
        assert.equal(r.status, 503, `${what}: ${r.status} ${r.text}`);
        assert.equal(r.json.error.code, 'unavailable', what);
        assert.equal(r.headers.get('retry-after'), '5', what);
      }
      assert.ok(live.maxMs < LIVENESS_MS, JSON.stringify(live));

      proxy.restore();
      await eventually('readiness once PostgreSQL is reachable again', async () => (await api(svc.baseUrl, 'GET', '/readyz')).status === 200);
      assert.equal((await api(svc.baseUrl, 'POST', a.inboxUrl, { json: { data: 3 } })).status, 202);
    } finally {
      await svc.stop({ keepStorage: true });
      await proxy.close();
      await storage.drop();
    }
  });
});
