// The guides are Markdown templates (src/docs/guides/) rendered with the deployment's values: every
// placeholder must resolve, and llms-full.txt must name every error code and every setting.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { llmsFullTxt, llmsTxt, renderGuide } from '../../src/docs/llms.js';
import { ERROR_CATALOGUE } from '../../src/domain/errors.js';

const custom = loadConfig({
  BASE_URL: 'https://ra.example.org/prefix',
  EMAIL_DOMAIN: 'mx.example.net',
  DATABASE_URL: 'postgres://operator:hunter2@db.internal:5432/ra',
  MAX_CAPTURE_BYTES: '4096',
  SSE_HEARTBEAT_MS: '1500',
});

/** The settings config.ts reads, from its source: the list a new setting joins without touching this test. */
function settingNames(): string[] {
  const source = readFileSync(new URL('../../../src/config.ts', import.meta.url), 'utf8');
  // Every reader (raw, int, optionalInt, bool) takes (env, 'NAME'): optionalInt's settings were once missed here.
  const names = new Set([...source.matchAll(/\b[a-zA-Z]+\(env, '([A-Z0-9_]+)'/g)].map((m) => m[1] as string));
  assert.ok(names.size >= 30, `found only ${names.size} settings in config.ts: has its reading changed?`);
  return [...names];
}

describe('guides (/llms.txt, /llms-full.txt)', () => {
  for (const [name, config] of [
    ['defaults', loadConfig({})],
    ['custom values', custom],
  ] as const) {
    it(`every placeholder resolves (${name})`, () => {
      for (const text of [llmsTxt(config), llmsFullTxt(config)]) {
        assert.ok(!text.includes('{{'), `a placeholder survived: ${text.slice(text.indexOf('{{'), text.indexOf('{{') + 60)}`);
        assert.ok(text.includes(config.baseUrl), 'the base URL is filled in');
      }
      assert.ok(llmsFullTxt(config).includes(`@${config.emailDomain}`), 'the email domain is filled in');
    });
  }

  it('every partial is included somewhere, so its placeholders are checked above', () => {
    const guides = new URL('../../../src/docs/guides/', import.meta.url);
    const text = ['llms', 'llms-full', 'partials']
      .flatMap((dir) => readdirSync(new URL(`${dir}/`, guides)).map((f) => readFileSync(new URL(`${dir}/${f}`, guides), 'utf8')))
      .join('\n');
    const partials = readdirSync(new URL('partials/', guides)).filter((f) => f.endsWith('.md'));
    assert.ok(partials.length > 0);
    for (const p of partials) assert.match(text, new RegExp(`\\{\\{\\s*>\\s*${p.slice(0, -3)}\\s*\\}\\}`), `partials/${p} is included`);
  });

  it('llms-full.txt names every error code of the catalogue', () => {
    const full = llmsFullTxt(custom);
    for (const [code, e] of Object.entries(ERROR_CATALOGUE)) {
      assert.ok(full.includes(`- ${e.status} ${code}: `), `${code} is in the error table`);
    }
  });

  it('llms-full.txt names every setting of config.ts', () => {
    const full = llmsFullTxt(custom);
    for (const setting of settingNames()) assert.match(full, new RegExp(`\\b${setting}\\b`), `${setting} is documented`);
  });

  it("shows the deployment's limits, and never a private setting", () => {
    const full = llmsFullTxt(custom);
    assert.match(full, /any\s+body up to 4096 bytes \(MAX_CAPTURE_BYTES/);
    assert.match(full, /after every 1\.5 s without an event/);
    assert.ok(!full.includes('hunter2') && !full.includes('db.internal'), 'the database URL is not shown');
  });

  it('is the sections in file-name order, joined by one blank line', () => {
    const full = renderGuide('llms-full', custom);
    assert.ok(full.startsWith('# Return Address: complete guide\n'));
    assert.ok(full.endsWith('\n') && !full.endsWith('\n\n'));
    const headings = full.split('\n').filter((l) => l.startsWith('## '));
    assert.ok(headings.indexOf('## What it is') < headings.indexOf('## Errors'));
    assert.ok(!/\n\n\n/.test(full), 'no section leaves a double blank line');
  });
});
