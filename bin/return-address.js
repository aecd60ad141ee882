#!/usr/bin/env node
// Shim for the `return-address` bin: runs the compiled CLI in this very process (no child), so a
// signal sent to it reaches the service. dist/ is built by `npm install` (the `prepare` script) or
// `npm run build`; in a checkout, `serve` first rebuilds if the sources changed since (cheap check).
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildIfStale } from './build-if-stale.js';

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');
if (process.argv[2] === 'serve') buildIfStale(packageDir);
const compiled = join(packageDir, 'dist', 'src', 'cli', 'main.js');
if (!existsSync(compiled)) {
  console.error('return-address: the CLI is not built yet (dist/ is missing). Run `npm run build` (or `npm install`) in the package directory.');
  process.exit(1);
}
// `npx return-address serve` (npm exec) starts this bin through `sh -c`, and Debian's sh (dash) does
// not exec it: npm passes a SIGTERM or SIGINT sent to npx on to that shell alone, the shell dies, npm
// exits with the signal, and the service would keep running, orphaned, holding its ports. So when
// npm exec started the service, the loss of its parent is taken as SIGTERM: it drains and exits.
// (Only then: a service a shell started in the background must outlive that shell.)
if (process.argv[2] === 'serve' && process.env.npm_lifecycle_event === 'npx') {
  const parent = process.ppid;
  const watch = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(watch);
    console.error(`return-address: the process npx started this through (pid ${parent}) has ended: stopping as on SIGTERM`);
    process.kill(process.pid, 'SIGTERM');
  }, 200);
  watch.unref();
}
const { cli } = await import(pathToFileURL(compiled).href);
await cli(process.argv.slice(2));
