// What @return-address/client publishes (packages/client): no dependency, ESM with declarations that
// name neither typebox nor the server, no Node-only module or global (it must run in Deno and
// browsers), types that are the route schemas' and up to date with them.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { MAX_WAIT_SECONDS } from '@return-address/client';
import { CLAIM_LIMITS } from '../../src/claims/claim-rules.js';
import * as schemas from '../../src/http/schemas.js';

const pkgDir = 'packages/client';
const dist = join(pkgDir, 'dist');
const files = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? files(join(dir, d.name)) : [join(dir, d.name)]));

describe('the @return-address/client package', () => {
  it('has no dependency of any kind and exports ESM with types', () => {
    const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
    assert.equal(pkg.type, 'module');
    for (const k of ['dependencies', 'peerDependencies', 'optionalDependencies', 'bundleDependencies']) assert.equal(pkg[k], undefined, `${k} must stay empty`);
    assert.deepEqual(pkg.exports['.'], { types: './dist/index.d.ts', default: './dist/index.js' });
    const service = JSON.parse(readFileSync('package.json', 'utf8'));
    assert.equal(service.dependencies['@return-address/client'], pkg.version, 'the service depends on this very version');
  });

  it('its emitted files import nothing but each other', () => {
    const emitted = files(dist).filter((f) => f.endsWith('.js') || f.endsWith('.d.ts'));
    assert.ok(emitted.some((f) => f.endsWith('index.d.ts')) && emitted.some((f) => f.endsWith('index.js')), `dist holds ${emitted}`);
    for (const f of emitted) {
      // Comments may name the sources; code may not.
      const code = readFileSync(f, 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/\/\/.*$/gm, '');
      const specifiers = [...code.matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)].map((m) => m[1]);
      for (const s of specifiers) assert.match(s ?? '', /^\.\.?\//, `${f} imports ${s}: only relative imports may ship`);
      assert.doesNotMatch(code, /typebox|src\/http|\bStatic</, `${f} names typebox or the server`);
      if (f.endsWith('.js'))
        assert.doesNotMatch(code, /(?<![.\w])(process|Buffer|require|__dirname)\b/, `${f} uses a Node-only global (reach it through globalThis, guarded)`);
    }
  });

  it("its MAX_WAIT_SECONDS is the service's longest long-poll, of a read and of a claim", () => {
    // The package cannot import the service, so it states the value; this keeps the two one fact.
    assert.equal(MAX_WAIT_SECONDS, (schemas.EventsQuery.properties.wait as { maximum?: number }).maximum);
    assert.equal(MAX_WAIT_SECONDS, CLAIM_LIMITS.wait.max);
  });

  it('its generated types are current with the route schemas, one type per schema', () => {
    const check = spawnSync(process.execPath, [join(pkgDir, 'scripts', 'generate.mjs'), '--check'], { encoding: 'utf8' });
    assert.equal(check.status, 0, check.stderr);
    const generated = readFileSync(join(pkgDir, 'src', 'generated', 'api-types.ts'), 'utf8');
    const typeNames = [...generated.matchAll(/^export type (\w+) =/gm)].map((m) => m[1]);
    for (const name of [
      'Address',
      'CreateAddressBody',
      'CreateAddressResponse',
      'CreateEventBody',
      'Event',
      'EventPage',
      'EventDeliveryResponse',
      'ErrorBody',
    ]) {
      assert.ok(name in schemas, `${name} is a route schema`);
      assert.ok(typeNames.includes(name), `${name} is generated`);
    }
  });
});
