// `npm start` / `return-address serve` in a checkout: build only when the sources changed since the
// last build, so a start (or a crash restart) costs a second, not a 15-20 s compile. The check is a
// walk of src/'s modification times against dist/.build-stamp (written by scripts/copy-assets.mjs
// after every build): a few milliseconds. An installed package has no src/ and is never rebuilt.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function newestMtime(path) {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = st.mtimeMs; // a deleted or renamed file changes its directory's time
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

/** Why dist/ is stale (undefined when it is current or there is nothing to build from). */
export function staleReason(packageDir) {
  const src = join(packageDir, 'src');
  if (!existsSync(src)) return undefined;
  const stamp = join(packageDir, 'dist', '.build-stamp');
  if (!existsSync(stamp)) return 'dist/ has not been built';
  const built = statSync(stamp).mtimeMs;
  const client = join(packageDir, 'packages', 'client');
  const inputs = [src, join(packageDir, 'tsconfig.json'), join(packageDir, 'tsconfig.build.json'), join(packageDir, 'package-lock.json'), join(client, 'src', 'index.ts'), join(client, 'scripts'), join(client, 'tsconfig.json')];
  for (const input of inputs) {
    if (existsSync(input) && newestMtime(input) > built) return `${input.slice(packageDir.length + 1)} changed since the last build`;
  }
  return undefined;
}

export function buildIfStale(packageDir) {
  const reason = staleReason(packageDir);
  if (reason === undefined) return;
  console.error(`return-address: ${reason}; building first (npm run build)`);
  const tsc = join(packageDir, 'node_modules', 'typescript', 'bin', 'tsc');
  // The client workspace first: the service imports @return-address/client's build.
  const client = join(packageDir, 'packages', 'client');
  if (existsSync(client)) {
    execFileSync(process.execPath, [join(client, 'scripts', 'generate.mjs')], { cwd: client, stdio: 'inherit' });
    execFileSync(process.execPath, [tsc, '-p', join(client, 'tsconfig.json')], { cwd: client, stdio: 'inherit' });
  }
  execFileSync(process.execPath, [tsc, '-p', join(packageDir, 'tsconfig.build.json')], { cwd: packageDir, stdio: 'inherit' });
  execFileSync(process.execPath, [join(packageDir, 'scripts', 'copy-assets.mjs')], { cwd: packageDir, stdio: 'inherit' });
}
