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
const { cli } = await import(pathToFileURL(compiled).href);
await cli(process.argv.slice(2));
