// The service package's manifest holds what it promises: its engines range is no looser than any
// production dependency's (npm would install it on a Node that mailauth or undici refuse), and
// `return-address/forward` is exported with type declarations that the publishing build emits; and
// TypeScript with the @types packages are dev dependencies, because nothing at run time loads them
// (the image, an installed package and a current checkout start without; a checkout whose sources
// changed builds with them, and says how to get them when they are missing: stale-build.test).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));

/** The lowest version a `>=a.b.c`-style range allows (first alternative), or undefined when it has no such bound. */
function lowerBound(range: string): number[] | undefined {
  const m = /^\s*>=?\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(range.split('||')[0]!);
  return m ? [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)] : undefined;
}
const atLeast = (a: number[], b: number[]) => a[0]! > b[0]! || (a[0] === b[0] && (a[1]! > b[1]! || (a[1] === b[1] && a[2]! >= b[2]!)));

describe('package manifest', () => {
  it("engines.node is at least every production dependency's lower bound", () => {
    const ours = lowerBound(pkg.engines.node);
    assert.ok(ours, `engines.node ${pkg.engines.node} has a lower bound`);
    const tighter: string[] = [];
    let checked = 0;
    for (const [path, entry] of Object.entries<{ dev?: boolean; engines?: { node?: string } | string[] }>(lock.packages)) {
      if (path === '' || entry.dev || Array.isArray(entry.engines) || !entry.engines?.node) continue;
      const theirs = lowerBound(entry.engines.node);
      if (!theirs) continue;
      checked++;
      if (!atLeast(ours, theirs)) tighter.push(`${path} needs node ${entry.engines.node}`);
    }
    assert.ok(checked >= 10, `only ${checked} dependencies declare a node range: has the lock file's shape changed?`);
    assert.deepEqual(tighter, [], `engines.node ${pkg.engines.node} is looser than`);
    assert.equal(lock.packages[''].engines.node, pkg.engines.node, 'the lock file says the same range');
  });

  it('return-address/forward is exported with its declarations, which the publishing build emits', () => {
    const forward = pkg.exports['./forward'];
    assert.equal(typeof forward, 'object');
    assert.equal(forward.types, forward.default.replace(/\.js$/, '.d.ts'));
    assert.match(pkg.scripts.build, /tsc -p tsconfig\.forward-types\.json/, 'npm run build (prepare, publish) emits the declarations');
    // They really come out: the declarations build run into a folder of its own.
    const out = mkdtempSync(join(tmpdir(), 'ra-forward-types-'));
    try {
      const r = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.forward-types.json', '--outDir', out], { encoding: 'utf8' });
      assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
      const dts = readFileSync(join(out, forward.types.replace(/^\.\/dist\//, '')), 'utf8');
      assert.match(dts, /export declare function forward\b/);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
    assert.ok(pkg.files.includes('dist/src'), 'and the package ships them');
  });
});

/** Every .js file under `dir`. */
function jsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? jsFiles(p) : p.endsWith('.js') ? [p] : [];
  });
}

describe('what run time needs', () => {
  const buildOnly = ['typescript', ...Object.keys({ ...pkg.dependencies, ...pkg.devDependencies }).filter((d) => d.startsWith('@types/'))];

  it('TypeScript and every @types package are dev dependencies, in the lock file too', () => {
    assert.ok(buildOnly.length >= 5, `found ${buildOnly.join(', ')}: has the manifest's shape changed?`);
    for (const dep of buildOnly) {
      assert.equal(pkg.dependencies[dep], undefined, `${dep} is a production dependency`);
      assert.ok(pkg.devDependencies[dep], `${dep} is a dev dependency`);
      assert.equal(lock.packages[`node_modules/${dep}`]?.dev, true, `the lock file marks ${dep} dev (run npm install --package-lock-only)`);
    }
  });

  it('no file the service runs imports TypeScript, and a build is what `prepare` runs (git installs bring dev dependencies for it)', () => {
    assert.ok(existsSync('dist/src'), 'the build ran (npm run build:all)');
    const runtime = [...jsFiles('dist/src'), ...jsFiles('bin')];
    assert.ok(runtime.length > 20, `only ${runtime.length} files`);
    const importers = runtime.filter((f) => /(?:from\s*|import\s*\(\s*|require\s*\(\s*)['"](?:typescript|@types\/[^'"]+)['"]/.test(readFileSync(f, 'utf8')));
    assert.deepEqual(importers, [], 'these load TypeScript at run time');
    // The one use: bin/build-if-stale.js runs node_modules/typescript/bin/tsc when src/ changed.
    assert.match(readFileSync('bin/build-if-stale.js', 'utf8'), /if \(!existsSync\(tsc\)\)/, 'and checks it is there first');
    assert.equal(pkg.scripts.prepare, 'npm run build');
  });
});
