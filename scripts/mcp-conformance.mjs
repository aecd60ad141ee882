#!/usr/bin/env node
// Runs the official MCP conformance suite (@modelcontextprotocol/conformance, server mode) against a
// running service's /mcp, once per protocol revision /mcp speaks (2025-11-25 and 2026-07-28), with
// `--requirements <revision>`: exactly the scenarios that revision requires. The scenarios that do
// not apply to a return address (the suite's fixture tools, prompts, resources, sampling and
// elicitation, which this server does not offer) are listed with their reasons in
// scripts/mcp-conformance-baseline.yml and passed as --expected-failures, so the run fails only on
// a scenario that applies, or on one of those that starts passing (then the baseline is stale).
//
//   npm run build:all && node scripts/mcp-conformance.mjs            # a service of its own (SQLite)
//   MCP_CONFORMANCE_URL=… MCP_CONFORMANCE_TOKEN=… node scripts/mcp-conformance.mjs   # a running one
//
// The suite is not a dependency (≈120 packages, Node ≥ 22 declared): npx fetches it once into its
// cache, after which the run works offline. Two adaptations, both outside the suite:
// - the suite sends no Authorization header, and /mcp needs the read token: a local proxy adds it
//   (so the DNS-rebinding scenario, meant for unauthenticated localhost servers, cannot apply);
// - on Node 20 the suite's bundle imports fs.globSync (Node 22), used only by its tier-check
//   command: a loader hook replaces that one import with a stub.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SUITE = process.env.MCP_CONFORMANCE_PACKAGE ?? '@modelcontextprotocol/conformance@0.2.0-alpha.12';
const REVISIONS = (process.env.MCP_CONFORMANCE_REVISIONS ?? '2025-11-25,2026-07-28').split(',');
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const work = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));

const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

async function waitReady(base) {
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`${base}/readyz`)).ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the service at ${base} did not become ready`);
}

/** A service of its own: the built CLI's serve, an empty SQLite store in a temporary folder. */
async function startService() {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    BASE_URL: base,
    SMTP_PORT: String(await freePort()),
    DATA_DIR: join(work, 'data'),
    LOG_LEVEL: 'warn',
  };
  const child = spawn(process.execPath, [join(root, 'bin/return-address.js'), 'serve'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  await waitReady(base);
  const created = await (await fetch(`${base}/api/v1/addresses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).json();
  return { url: created.endpoints.mcp_url, token: created.credentials.read_token, stop: () => child.kill('SIGTERM') };
}

/** Forwards every request to `target`, adding the bearer token the suite cannot send. */
async function startProxy(target, token) {
  const t = new URL(target);
  const port = await freePort();
  const server = createServer((req, res) => {
    const headers = { ...req.headers, host: t.host, authorization: `Bearer ${token}` };
    const up = request({ host: t.hostname, port: t.port, path: t.pathname, method: req.method, headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    res.on('close', () => up.destroy());
    req.pipe(up);
  });
  await new Promise((r) => server.listen(port, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${port}/mcp`, stop: () => server.close() };
}

/** The Node 20 adaptation: a loader hook that stubs the bundle's fs.globSync import. */
function node20Hook() {
  writeFileSync(
    join(work, 'hook.mjs'),
    `export async function load(url, context, next) {
  const r = await next(url, context);
  if (!url.includes('@modelcontextprotocol/conformance/dist/') || !r.source) return r;
  let name;
  let s = String(r.source).replace(/globSync as ([A-Za-z_$][\\w$]*),/, (_m, n) => { name = n; return ''; });
  if (name) s = s.replace(/^(#![^\\n]*\\n)?/, (m) => m + 'const ' + name + '=()=>{throw new Error("globSync needs Node 22")};');
  return { ...r, source: s };
}\n`,
  );
  writeFileSync(join(work, 'register.mjs'), "import { register } from 'node:module';\nregister('./hook.mjs', import.meta.url);\n");
  return `--import=${join(work, 'register.mjs')}`;
}

function runSuite(url, revision) {
  const out = join(work, `results-${revision}`);
  const args = ['--yes', SUITE, 'server', '--url', url, '--requirements', revision, '-o', out];
  args.push('--expected-failures', join(root, 'scripts/mcp-conformance-baseline.yml'));
  const major = Number(process.versions.node.split('.')[0]);
  const env = { ...process.env, NODE_OPTIONS: [process.env.NODE_OPTIONS, major < 22 ? node20Hook() : ''].filter(Boolean).join(' ') };
  return new Promise((resolve) => {
    const child = spawn('npx', args, { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (d) => {
      text += d;
    });
    child.on('close', (code) => resolve({ code, text, out }));
  });
}

/** Every scenario of a run: passed and failed check counts, from the suite's checks.json files. */
function tally(out) {
  const rows = [];
  for (const dir of readdirSync(out).sort()) {
    let checks;
    try {
      checks = JSON.parse(readFileSync(join(out, dir, 'checks.json'), 'utf8'));
    } catch {
      continue;
    }
    const failed = checks.filter((c) => c.status === 'FAILURE');
    rows.push({
      scenario: dir.replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT.*$/, ''),
      passed: checks.filter((c) => c.status === 'SUCCESS').length,
      failed,
    });
  }
  return rows;
}

const external = process.env.MCP_CONFORMANCE_URL;
const svc = external ? { url: external, token: process.env.MCP_CONFORMANCE_TOKEN ?? '', stop: () => {} } : await startService();
const proxy = await startProxy(svc.url, svc.token);
let exit = 0;
try {
  for (const revision of REVISIONS) {
    const { code, text, out } = await runSuite(proxy.url, revision);
    console.log(`\n=== ${revision}: the suite exited ${code} ===`);
    for (const row of tally(out)) {
      console.log(`${row.failed.length ? '✗' : '✓'} ${row.scenario}: ${row.passed} passed, ${row.failed.length} failed`);
      for (const f of row.failed) console.log(`    ${f.id}: ${(f.errorMessage ?? '').slice(0, 200)}`);
    }
    const verdict = text.split('\n').filter((l) => /baseline|expected|unexpected|stale/i.test(l));
    if (verdict.length) console.log(verdict.join('\n'));
    if (code !== 0) exit = 1;
  }
} finally {
  proxy.stop();
  svc.stop();
  if (!process.env.MCP_CONFORMANCE_KEEP) rmSync(work, { recursive: true, force: true });
  else console.log(`results kept in ${work}`);
}
process.exit(exit);
