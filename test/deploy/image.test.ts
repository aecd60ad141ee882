// The container image (Dockerfile, docs/deploy.md "The image"), built and run for real: opt-in
// (IMAGE_TEST=1), because a first build takes minutes (SQLite compiles when no prebuilt binary can
// be fetched), so it never runs in a plain `npm test`. Where it runs:
//   - builds the image with buildah (layers cached: a second run rebuilds only what changed);
//   - checks its size against IMAGE_MAX_MB, and what our layers add over the runtime base against
//     OURS_MAX_MB (the number that transfers to the official base), and that the runtime holds
//     none of the build's tools: no npm, compiler, TypeScript, @types, SQLite sources or maps;
//   - runs it with podman (host network), waits for /readyz, creates an address, delivers an event
//     and reads it back, then `podman stop` (SIGTERM): a long-poll in flight gets its empty page,
//     the exit code is 0 and the log says 'shutting down'.
// Without a registry (this project's CI machine reaches none), the bases are assembled locally by
// test/deploy/assemble-base.sh (debootstrap, cached under /var/tmp/ra-image-base); IMAGE_NODE_BASE
// and IMAGE_RUNTIME_BASE name others (the Dockerfile's pinned defaults: IMAGE_BASES=pinned). Where
// buildah or podman is missing, or podman cannot start a container, the part that cannot run is
// skipped with the reason (the runtime's own error). The first run outlives run-tests.mjs's
// 300 s bound per file: run it alone, without one, then through the runner:
//   npm run build:all && IMAGE_TEST=1 node --test dist/test/deploy/image.test.js
//   IMAGE_TEST=1 STORES=sqlite node scripts/run-tests.mjs deploy/image
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { api, createAddress, freePort, STORE, sleep } from '../helpers.js';

const MB = 1_000_000; // as `docker images` and `podman images` count
/** The bounds, from measured sizes (docs/deploy.md, "The image") with a margin: a regression (a
 *  dev dependency or the compiler shipped again) crosses them, a patch release of a dependency does not. */
const IMAGE_MAX_MB = Number(process.env.IMAGE_MAX_MB ?? 200);
const OURS_MAX_MB = Number(process.env.OURS_MAX_MB ?? 125);
const TAG = 'localhost/return-address:image-test';

const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
const skip =
  process.env.IMAGE_TEST !== '1'
    ? 'opt-in: IMAGE_TEST=1 builds and runs the image (minutes; docs/deploy.md, "The image")'
    : STORE !== 'sqlite'
      ? 'the image is the same for both stores: built and run once, under STORE=sqlite'
      : !has('buildah')
        ? 'no buildah on PATH (apt-get install buildah podman debootstrap)'
        : false;

function run(cmd: string, args: string[], opts: { timeout?: number } = {}): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: opts.timeout ?? 60_000, maxBuffer: 64 * MB });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status ?? r.signal}:\n${r.stdout.slice(-4000)}\n${r.stderr.slice(-4000)}`);
  return r.stdout.trim();
}

/** An image's size in bytes, uncompressed, as `podman images` counts it (buildah alone gives "76.1 MB"). */
function imageBytes(ref: string): number {
  if (has('podman')) return Number(run('podman', ['image', 'inspect', '--format', '{{.Size}}', ref]));
  const [n, unit] = (JSON.parse(run('buildah', ['images', '--json', ref]))[0].size as string).split(' ');
  return Number(n) * ({ kB: 1e3, MB: 1e6, GB: 1e9 } as Record<string, number>)[unit!]!;
}

/** Total bytes of the regular files under `dir` (no symlink followed). */
function du(dir: string): number {
  let total = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p, { throwIfNoEntry: false });
    if (st?.isDirectory()) total += du(p);
    else if (st?.isFile()) total += st.size;
  }
  return total;
}

describe('the container image', { skip }, () => {
  let bases: { node: string; runtime: string } | undefined;

  before(() => {
    if (process.env.IMAGE_NODE_BASE) {
      bases = { node: process.env.IMAGE_NODE_BASE, runtime: process.env.IMAGE_RUNTIME_BASE ?? process.env.IMAGE_NODE_BASE };
    } else if (process.env.IMAGE_BASES !== 'pinned') {
      // Both stand-ins, assembled once and then found in buildah's storage: a second run takes a second.
      const [debian, node] = run('sh', ['test/deploy/assemble-base.sh'], { timeout: 20 * 60_000 })
        .split('\n')
        .slice(-2);
      bases = { node: node!, runtime: debian! };
    }
  });

  it('builds, within its size bound, and ships none of the build tools', { timeout: 45 * 60_000 }, () => {
    const args = ['bud', '--isolation', 'chroot', '--format', 'docker', '--layers', '-t', TAG];
    if (bases) args.push('--build-arg', `NODE_IMAGE=${bases.node}`, '--build-arg', `RUNTIME_IMAGE=${bases.runtime}`);
    const t0 = performance.now();
    run('buildah', [...args, '.'], { timeout: 44 * 60_000 });
    const seconds = Math.round((performance.now() - t0) / 1000);
    const size = imageBytes(TAG);
    const runtimeBase = bases?.runtime ?? /^ARG RUNTIME_IMAGE=(\S+)$/m.exec(readFileSync('Dockerfile', 'utf8'))![1]!;
    const base = imageBytes(runtimeBase);
    const ours = size - base;
    console.log(
      `  built in ${seconds} s: image ${(size / MB).toFixed(1)} MB = base ${runtimeBase} ${(base / MB).toFixed(1)} MB + ours ${(ours / MB).toFixed(1)} MB`,
    );
    assert.ok(ours <= OURS_MAX_MB * MB, `our layers add ${(ours / MB).toFixed(1)} MB, over the bound of ${OURS_MAX_MB} MB`);
    assert.ok(size <= IMAGE_MAX_MB * MB, `the image is ${(size / MB).toFixed(1)} MB, over the bound of ${IMAGE_MAX_MB} MB`);

    // What the runtime holds, read from its mounted file system (no container needed).
    const ctr = run('buildah', ['from', '--pull-never', TAG]);
    try {
      const root = run('buildah', ['mount', ctr]);
      const app = join(root, 'app');
      assert.ok(existsSync(join(root, 'usr/local/bin/node')), 'node is there');
      for (const absent of ['usr/local/bin/npm', 'usr/local/lib/node_modules', 'usr/local/include/node', 'usr/bin/g++', 'usr/bin/make', 'usr/bin/python3']) {
        assert.equal(existsSync(join(root, absent)), false, `/${absent} is not shipped`);
      }
      const nm = join(app, 'node_modules');
      assert.ok(existsSync(join(nm, 'fastify')), 'the production dependencies are');
      for (const absent of ['typescript', '@types', '@biomejs', 'better-sqlite3/deps', 'better-sqlite3/src', 'better-sqlite3/build/Release/obj.target']) {
        assert.equal(existsSync(join(nm, absent)), false, `node_modules/${absent} is not shipped`);
      }
      assert.deepEqual(readdirSync(join(nm, 'better-sqlite3/build/Release')), ['better_sqlite3.node'], "better-sqlite3's build: the addon only");
      const leftovers = spawnSync('find', [app, '-type', 'f', '(', '-name', '*.map', '-o', '-name', '*.d.ts', '-o', '-name', '*.ts', ')', '-print', '-quit'], {
        encoding: 'utf8',
      });
      assert.equal(leftovers.stdout.trim(), '', 'no source maps, declarations or TypeScript sources');
      assert.equal(existsSync(join(app, 'src')), false, 'no sources: the start never rebuilds');
      console.log(`  /app ${(du(app) / MB).toFixed(1)} MB, of which node_modules ${(du(nm) / MB).toFixed(1)} MB`);
    } finally {
      spawnSync('buildah', ['umount', ctr]);
      spawnSync('buildah', ['rm', ctr]);
    }
  });

  describe('runs under podman', () => {
    // crun (podman's default here) refuses a host with cgroup v1 and v2 mounted at once ("cgroups in
    // hybrid mode not supported"), and a container's default RLIMIT_NOFILE (1,048,576) above the
    // host's hard limit is refused too: runc when crun cannot start one, limits within the host's.
    let podman: string[] | undefined;
    let why = '';
    const name = `ra-image-test-${process.pid}`;
    let out = '';

    before(() => {
      if (!has('podman')) {
        why = 'no podman on PATH';
        return;
      }
      const nofile = run('sh', ['-c', 'ulimit -Hn']);
      const limits = ['--ulimit', `nofile=${nofile}:${nofile}`, '--ulimit', 'nproc=4096:4096'];
      const tries = [['podman'], ...(has('runc') ? [['podman', '--runtime', 'runc']] : [])];
      for (const t of tries) {
        const r = spawnSync(t[0]!, [...t.slice(1), 'run', '--rm', '--network', 'host', ...limits, '--entrypoint', 'node', TAG, '-e', 'process.exit(0)'], {
          encoding: 'utf8',
          timeout: 120_000,
        });
        if (r.status === 0) {
          podman = [...t, 'run', '-d', '--network', 'host', ...limits];
          console.log(`  containers start with: ${podman.join(' ')}${why ? ` (before: ${why})` : ''}`);
          return;
        }
        why += `${t.join(' ')} run: ${r.stderr.trim().split('\n').at(-1)}; `;
      }
    });

    after(() => {
      if (podman) spawnSync('podman', ['rm', '-f', '-v', name], { stdio: 'ignore' });
    });

    it('serves, and stops on SIGTERM with exit 0', { timeout: 5 * 60_000 }, async (t) => {
      if (!podman) {
        t.skip(`podman cannot start a container here: ${why}`); // skipped only where no OCI runtime can start one (the build and size checks above still ran); the runtime's own error is the reason
        return;
      }
      const port = await freePort();
      const smtpPort = await freePort();
      const baseUrl = `http://127.0.0.1:${port}`;
      const env = { PORT: port, SMTP_PORT: smtpPort, HOST: '127.0.0.1', BASE_URL: baseUrl, LOG_LEVEL: 'info' };
      run(podman[0]!, [...podman.slice(1), '--name', name, ...Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]), TAG]);
      const logs = () => spawnSync('podman', ['logs', name], { encoding: 'utf8' });
      const t0 = performance.now();
      for (;;) {
        if (
          (await fetch(`${baseUrl}/readyz`).then(
            (r) => r.ok,
            () => false,
          )) === true
        )
          break;
        const state = run('podman', ['inspect', '--format', '{{.State.Status}}', name]);
        const l = logs();
        assert.equal(state, 'running', `the container stopped before it was ready:\n${l.stdout}${l.stderr}`);
        assert.ok(performance.now() - t0 < 120_000, `not ready within 120 s:\n${l.stdout}${l.stderr}`);
        await sleep(200);
      }
      console.log(`  ready ${Math.round(performance.now() - t0)} ms after podman run`);
      // The image's own HEALTHCHECK (node's fetch of /readyz on $PORT) passes too.
      const health = spawnSync('podman', ['healthcheck', 'run', name], { encoding: 'utf8', timeout: 60_000 });
      assert.equal(health.status, 0, `podman healthcheck run: ${health.stdout}${health.stderr}`);

      const a = await createAddress(baseUrl);
      const delivered = await api(baseUrl, 'POST', a.inboxUrl, { json: { data: { hello: 'image' } } });
      assert.equal(delivered.status, 202, delivered.text);
      const page = await api(baseUrl, 'GET', `/api/v1/addresses/${a.id}/events`, { token: a.token });
      assert.equal(page.status, 200, page.text);
      assert.equal(page.json.events.length, 1, page.text);
      assert.deepEqual(page.json.events[0].data, { hello: 'image' });

      // A long-poll in flight when the stop comes gets its empty page, not a reset.
      const cursor = page.json.next_cursor;
      const poll = api(baseUrl, 'GET', `/api/v1/addresses/${a.id}/events?wait=25&after=${cursor}`, { token: a.token });
      await sleep(300);
      execFileSync('podman', ['stop', '-t', '30', name], { timeout: 60_000 });
      const last = await poll;
      assert.equal(last.status, 200, last.text);
      assert.equal(last.json.events.length, 0, last.text);
      const code = run('podman', ['inspect', '--format', '{{.State.ExitCode}}', name]);
      const l = logs();
      out = `${l.stdout}${l.stderr}`;
      assert.equal(code, '0', `exit code after podman stop:\n${out}`);
      assert.match(out, /shutting down/);
      assert.doesNotMatch(out, /building first/, 'no build at start');
    });
  });
});
