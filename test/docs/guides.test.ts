// The guides are Markdown templates (src/docs/guides/) rendered with the deployment's values: every
// placeholder must resolve, and llms-full.txt must name every error code and every setting.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { llmsFullTxt, llmsTxt, renderGuide } from '../../src/docs/llms.js';
import { ERROR_CATALOGUE } from '../../src/domain/errors.js';
import { UNTRUSTED_CONTENT } from '../../src/domain/trust.js';

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

describe('recipes an agent follows cannot be satisfied by a forgery', () => {
  const config = loadConfig({});
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
  const texts: [string, string][] = [
    ['/llms.txt', llmsTxt(config)],
    ['/llms-full.txt', llmsFullTxt(config)],
    ['README.md', readme],
  ];

  it("llms.txt's first screen says event content is data, in the one sentence", () => {
    const firstScreen = llmsTxt(config).split('\n').slice(0, 25).join('\n');
    assert.ok(firstScreen.includes(UNTRUSTED_CONTENT), firstScreen);
  });

  it('no recipe filters on data.signature or data.authentication', () => {
    for (const [name, text] of texts) {
      for (const bad of ['match data.signature', 'match=data.signature', '"data.signature.verified"', 'data.authentication.summary=', '"data.authentication']) {
        assert.ok(!text.includes(bad), `${name} still has a recipe with ${bad}`);
      }
    }
  });

  it('every CLI wait recipe for a provider event or a mail filters on trust; an OAuth one on trust.ingress=capture', () => {
    for (const [name, text] of texts) {
      // A command may continue on the next line after a backslash.
      const commands = text
        .replace(/\\\n\s*/g, ' ')
        .split('\n')
        .filter((l) => /return-address(-py)? wait|return_address\.py wait/.test(l));
      assert.ok(commands.length > 0, `${name} has wait recipes`);
      for (const c of commands) {
        const type = /--type (\S+)/.exec(c)?.[1];
        if (type === undefined) continue;
        if (type === 'http.request') assert.match(c, /trust\.ingress=capture/, `${name}: ${c}`);
        else assert.match(c, /trust\.verified=true/, `${name}: ${c}`);
      }
    }
  });

  it('every client recipe that waits on a match includes trust', () => {
    for (const [name, text] of texts) {
      const calls = text
        .split('\n')
        .filter((l) => /(waitFor|wait_for|wait_for_event)\b.*match/.test(l) && !/match\?|match: \{path|wait_for\(type, match/.test(l));
      for (const c of calls) assert.match(c, /trust\.(verified|ingress)/, `${name}: ${c}`);
    }
  });
});
