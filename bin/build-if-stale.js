// `npm start` / `return-address serve` in a checkout: build only when the sources changed since the
// last build, so a start (or a crash restart) costs a second, not a 15-20 s compile. The check is a
// walk of src/'s modification times against dist/.build-stamp (written by scripts/copy-assets.mjs
// after every build): a few milliseconds. An installed package has no src/ and is never rebuilt.
// TypeScript and the @types packages are dev dependencies: nothing at run time needs them (the
// image and an installed package have no src/). A checkout installed or pruned without them
// (`--omit=dev`) whose sources changed gets one line saying how to build, not a missing module.
import { execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** sysexits' EX_CONFIG: systemd's Restart=on-failure can be told not to loop on it (RestartPreventExitStatus=78). */
export const EX_CONFIG = 78;

/** Whether this process may write `path` (or, when it does not exist yet, create it in its nearest existing parent). */
function writable(path) {
  let p = path;
  while (!existsSync(p) && dirname(p) !== p) p = dirname(p);
  try {
    accessSync(p, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

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
  // Under a hardened unit (ProtectSystem=strict, a read-only checkout) the build cannot write: one
  // clear line and EX_CONFIG, not a compiler's EACCES stack and a restart loop.
  const client = join(packageDir, 'packages', 'client');
  const outputs = [join(packageDir, 'dist'), ...(existsSync(client) ? [join(client, 'dist'), join(client, 'src', 'generated')] : [])];
  const readOnly = outputs.find((o) => !writable(o));
  if (readOnly !== undefined) {
    console.error(
      `return-address: ${reason}, and ${readOnly} is not writable by this process (a read-only unit?): run \`npm run build\` in ${packageDir} as its owner, then start again`,
    );
    process.exit(EX_CONFIG);
  }
  const tsc = join(packageDir, 'node_modules', 'typescript', 'bin', 'tsc');
  if (!existsSync(tsc)) {
    console.error(
      `return-address: ${reason}, and TypeScript (a dev dependency) is not installed here (installed or pruned with --omit=dev?): run \`npm install && npm run build\` in ${packageDir}, then start again`,
    );
    process.exit(EX_CONFIG);
  }
  console.error(`return-address: ${reason}; building first (npm run build)`);
  // The client workspace first: the service imports @return-address/client's build.
  if (existsSync(client)) {
    execFileSync(process.execPath, [join(client, 'scripts', 'generate.mjs')], { cwd: client, stdio: 'inherit' });
    execFileSync(process.execPath, [tsc, '-p', join(client, 'tsconfig.json')], { cwd: client, stdio: 'inherit' });
  }
  execFileSync(process.execPath, [tsc, '-p', join(packageDir, 'tsconfig.build.json')], { cwd: packageDir, stdio: 'inherit' });
  execFileSync(process.execPath, [join(packageDir, 'scripts', 'copy-assets.mjs')], { cwd: packageDir, stdio: 'inherit' });
}
