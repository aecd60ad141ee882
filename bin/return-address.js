#!/usr/bin/env node
// Shim for the `return-address` bin: runs the compiled CLI. dist/ is built by `npm install`
// (the `prepare` script) or `npm run build`.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const compiled = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'src', 'cli', 'main.js');
if (!existsSync(compiled)) {
  console.error('return-address: the CLI is not built yet (dist/ is missing). Run `npm run build` (or `npm install`) in the package directory.');
  process.exit(1);
}
const { cli } = await import(pathToFileURL(compiled).href);
await cli(process.argv.slice(2));
