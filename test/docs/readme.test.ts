// The README is a short front page that points: the pitch, the quick start, the typical flow, the two
// commands, and links to the documents that own their facts (the guide's sections, docs/deploy.md,
// docs/design.md). It once retold all of them section by section and drifted from each; these checks
// keep it short, keep its links alive, and keep the facts it hands over findable where they went.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const README = read('README.md');

/** GitHub's anchor of a Markdown heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

/** The anchors of a Markdown file's headings, outside code blocks. */
function anchors(path: string): Set<string> {
  let inCode = false;
  const out = new Set<string>();
  for (const line of read(path).split('\n')) {
    if (line.startsWith('```')) inCode = !inCode;
    const h = inCode ? null : /^#{1,6} (.*)$/.exec(line);
    if (h?.[1]) out.add(slug(h[1]));
  }
  return out;
}

/** The README's relative links: [text](target) and ![alt](target), without URLs. */
function relativeLinks(): { target: string; anchor: string | undefined }[] {
  return [...README.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1] as string)
    .filter((t) => !/^[a-z]+:/.test(t))
    .map((t) => {
      const [target, anchor] = t.split('#') as [string, string | undefined];
      return { target: target === '' ? 'README.md' : posix.normalize(target), anchor };
    });
}

describe('the README', () => {
  it('is at most 250 lines', () => {
    const lines = README.split('\n').length;
    assert.ok(lines <= 250, `README.md has ${lines} lines: move what it retells to the document that owns it and link there`);
  });

  it('holds the pitch, the quick start, the typical flow and the two commands', () => {
    assert.match(README, /^# Return Address\n\nA persistent place where the world can answer a short-lived AI agent\./);
    for (const heading of ['## Quick start', '## The typical agent flow']) assert.ok(README.includes(`\n${heading}\n`), `a "${heading}" section`);
    for (const command of ['npm install && npm start', 'npm install && npm test'])
      assert.ok(
        README.split('\n').some((l) => l.startsWith(command)),
        `a line that starts with \`${command}\``,
      );
    // The flow's four steps, each as a command a reader can paste.
    for (const step of ['POST $BASE/api/v1/addresses', 'Idempotency-Key', '?after=0&wait=25', '/ack"'])
      assert.ok(README.includes(step), `the flow shows ${step}`);
  });

  it("states npm test's wall time on 2 cores", () => {
    assert.match(README, /about \d+ minutes on 2 cores/);
  });

  it('every relative link reaches a file, and every anchor a heading of it', () => {
    const links = relativeLinks();
    assert.ok(links.length >= 20, `only ${links.length} relative links: has the link form changed?`);
    for (const { target, anchor } of links) {
      assert.ok(existsSync(join(ROOT, target)), `README.md links to ${target}, which does not exist`);
      if (anchor === undefined) continue;
      assert.ok(target.endsWith('.md'), `${target}#${anchor}: an anchor into a file that is not Markdown`);
      assert.ok(anchors(target).has(anchor), `README.md links to ${target}#${anchor}, but no heading of ${target} has that anchor`);
    }
  });

  it("links every section of /llms-full.txt, each numbered section of docs/deploy.md, and design.md's file", () => {
    const targets = new Set(relativeLinks().map((l) => l.target));
    const sections = readdirSync(join(ROOT, 'src/docs/guides/llms-full')).filter((f) => f.endsWith('.md') && !f.startsWith('010-'));
    assert.ok(sections.length >= 20, `only ${sections.length} guide sections found`);
    const unlinked = sections.filter((f) => !targets.has(`src/docs/guides/llms-full/${f}`));
    assert.deepEqual(unlinked, [], `guide sections the README does not link: ${unlinked.join(', ')}`);
    for (const doc of ['docs/deploy.md', 'docs/design.md', 'bench/README.md', 'LICENSE']) assert.ok(targets.has(doc), `README.md links ${doc}`);
    const deployAnchors = new Set(relativeLinks().flatMap((l) => (l.target === 'docs/deploy.md' && l.anchor ? [l.anchor] : [])));
    for (const h of read('docs/deploy.md')
      .split('\n')
      .filter((l) => /^## \d+\. /.test(l)))
      assert.ok(deployAnchors.has(slug(h.slice(3))), `README.md links docs/deploy.md's "${h.slice(3)}"`);
  });

  it('names each guide section by the title the guide gives it', () => {
    for (const m of README.matchAll(/\[([^\]]+)\]\(src\/docs\/guides\/llms-full\/([^)]+\.md)\)/g)) {
      const title = /^## (.*)$/m.exec(read(`src/docs/guides/llms-full/${m[2]}`))?.[1] ?? '';
      assert.ok(title.startsWith(m[1] as string), `the link "${m[1]}" goes to ${m[2]}, whose title is "${title}"`);
    }
  });
});

describe('the facts the README handed over', () => {
  /** The settings config.ts reads (each reader takes (env, 'NAME')). */
  const settings = [...new Set([...read('src/config.ts').matchAll(/\b[a-zA-Z]+\(env, '([A-Z0-9_]+)'/g)].map((m) => m[1] as string))];

  it('docs/deploy.md\'s "Every setting" table names every setting of config.ts with its default', () => {
    assert.ok(settings.length >= 30, `found only ${settings.length} settings in config.ts`);
    const deploy = read('docs/deploy.md');
    const at = deploy.indexOf('\n## Appendix: every setting\n');
    assert.ok(at >= 0, 'docs/deploy.md has the appendix "Every setting"');
    const rows = deploy
      .slice(at, deploy.indexOf('\n## ', at + 1))
      .split('\n')
      .filter((l) => l.startsWith('| `'));
    for (const s of settings) {
      const row = rows.find((r) => (r.split('|')[1] as string).includes(`\`${s}\``));
      assert.ok(row, `${s} has a row in docs/deploy.md, "Every setting"`);
      assert.ok((row.split('|')[2] as string).trim() !== '', `${s}'s row names its default`);
    }
  });

  it('docs/deploy.md keeps the operator sections the README had, and design.md the developer ones', () => {
    const deploy = anchors('docs/deploy.md');
    for (const h of ['controls-against-abuse', 'retention-by-age', 'admin-commands-and-backups', 'metrics', 'several-instances-on-postgresql'])
      assert.ok(deploy.has(h), `docs/deploy.md has a section #${h}`);
    const design = anchors('docs/design.md');
    for (const h of ['where-things-are', 'tests-and-tools', 'performance-in-short', 'packages']) assert.ok(design.has(h), `docs/design.md has a section #${h}`);
  });

  it('every Prometheus series the service defines is in docs/deploy.md, "Metrics"', () => {
    // Every file under src/ that defines series: src/metrics/ and a room's own (push/push-metrics.ts).
    const source = (readdirSync(join(ROOT, 'src'), { recursive: true }) as string[])
      .filter((f) => f.endsWith('.ts') && (f.startsWith('metrics/') || /metrics\.ts$/.test(f)))
      .map((f) => read(`src/${f}`))
      .join('\n');
    const series = [...new Set([...source.matchAll(/name: '(return_address_[a-z_]+)'/g)].map((m) => m[1] as string))];
    assert.ok(series.length >= 10, `found only ${series.length} series in src/: has their form changed?`);
    const deploy = read('docs/deploy.md');
    for (const s of series) assert.ok(deploy.includes(`\`${s}\``), `${s} is in docs/deploy.md's metrics table`);
  });

  it('the pictures the README shows are where the browser tests write them', () => {
    for (const picture of ['docs/inspector.png', 'docs/approval.png']) {
      assert.ok(README.includes(`](${picture})`), `README.md shows ${picture}`);
      assert.ok(existsSync(join(ROOT, dirname(picture), picture.slice(picture.lastIndexOf('/') + 1))), `${picture} exists`);
    }
  });
});
