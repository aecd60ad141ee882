// The maps of the code stay true to it: design.md's tree ("Where things are") and its Rooms table
// name every room under src/, the rooms whose README the tree mentions have one, a room's README
// names every file of the room, and every comment that points at design.md names a section it has.
// Each list is read from the tree itself, so a new room, file or renamed section fails here until
// the maps say so.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

const entries = readdirSync(join(ROOT, 'src'), { withFileTypes: true });
const ROOMS = entries.filter((e) => e.isDirectory()).map((e) => e.name);
const TOP_FILES = entries.filter((e) => e.isFile() && e.name.endsWith('.ts')).map((e) => e.name);

/** design.md's tree: the code block under "## Where things are". */
function designTree(): string[] {
  const design = read('docs/design.md');
  const at = design.indexOf('\n## Where things are\n');
  assert.ok(at >= 0, 'design.md has a "Where things are" section');
  const block = /```\n([\s\S]*?)```/.exec(design.slice(at));
  assert.ok(block?.[1], 'the "Where things are" section holds a code block');
  return block[1].split('\n');
}

/** Every .ts file under `dir` (relative to the repository), as paths relative to `dir`. */
function tsFilesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFilesUnder(`${dir}/${e.name}`).map((f) => `${e.name}/${f}`) : e.name.endsWith('.ts') ? [e.name] : [],
  );
}

/** design.md's section and subsection titles; a pointer may name one by its whole title or by the part before its colon. */
function designSections(): string[] {
  return read('docs/design.md')
    .split('\n')
    .flatMap((l) => /^#{2,3} (.*)$/.exec(l)?.[1]?.trim() ?? []);
}

const hasSection = (sections: string[], name: string) => sections.some((s) => s === name || s.startsWith(`${name}:`));

/** Every text file a design.md pointer may sit in: the code, its tests, tools and documents. */
function pointerFiles(): string[] {
  const out: string[] = ['README.md', 'docs/deploy.md'];
  const skip = new Set(['node_modules', 'dist', 'generated', 'results', 'fixtures']);
  const walk = (dir: string) => {
    for (const name of readdirSync(join(ROOT, dir))) {
      if (skip.has(name)) continue;
      const path = `${dir}/${name}`;
      if (statSync(join(ROOT, path)).isDirectory()) walk(path);
      else if (/\.(ts|mjs|js|md|py|sql|yaml|sh)$/.test(name)) out.push(path);
    }
  };
  for (const dir of ['src', 'test', 'bench', 'scripts', 'packages/client/src', 'packages/client/scripts', 'clients', 'deploy']) walk(dir);
  return out;
}

describe('the maps of the code', () => {
  it("design.md's tree names every room and file at the top of src/", () => {
    const tree = designTree();
    assert.ok(ROOMS.length >= 15, `found only ${ROOMS.length} rooms under src/`);
    for (const room of ROOMS)
      assert.ok(
        tree.some((l) => l.startsWith(`  ${room}/ `)),
        `src/${room}/ is in design.md's tree ("Where things are")`,
      );
    for (const file of TOP_FILES)
      assert.ok(
        tree.some((l) => l.startsWith(`  ${file} `)),
        `src/${file} is in design.md's tree ("Where things are")`,
      );
  });

  it("a room's README is there exactly when the tree says so, and capture/, email/, storage/ have one", () => {
    const tree = designTree();
    for (const room of ROOMS) {
      const line = tree.findIndex((l) => l.startsWith(`  ${room}/ `));
      // The room's entry runs on until the next line that starts an entry of its own.
      let end = line + 1;
      while (end < tree.length && /^ {10,}\S/.test(tree[end] as string)) end++;
      const says = tree.slice(line, end).join(' ').includes('(README.md)');
      const has = readdirSync(join(ROOT, 'src', room)).includes('README.md');
      assert.equal(says, has, `src/${room}/: the tree ${says ? 'mentions' : 'does not mention'} a README.md, and there ${has ? 'is' : 'is none'}`);
    }
    for (const room of ['capture', 'email', 'storage']) assert.ok(readdirSync(join(ROOT, 'src', room)).includes('README.md'), `src/${room}/README.md`);
  });

  it("storage/'s README names every file of the room in its table (a migration by its folder)", () => {
    const readme = read('src/storage/README.md');
    const named = new Set([...readme.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1] as string));
    const walk = (dir: string): string[] =>
      readdirSync(join(ROOT, 'src/storage', dir), { withFileTypes: true }).flatMap((e) => {
        const path = dir === '' ? e.name : `${dir}/${e.name}`;
        if (e.isDirectory()) return e.name === 'migrations' ? [`${path}/`] : walk(path);
        return e.name === 'README.md' ? [] : [path];
      });
    const files = walk('');
    assert.ok(files.length >= 40, `found only ${files.length} files under src/storage`);
    for (const file of files) assert.ok(named.has(file), `src/storage/${file} is in src/storage/README.md's table`);
    for (const name of named) assert.ok(files.includes(name), `src/storage/README.md names ${name}, which is not there`);
  });

  it("a room's README names every .ts file of the room (by its path in the room, or its name)", () => {
    // Rooms gain files while others write; one failure lists every file missing from every README.
    const missing: string[] = [];
    let named = 0;
    for (const room of ROOMS) {
      if (!readdirSync(join(ROOT, 'src', room)).includes('README.md')) continue;
      const readme = read(`src/${room}/README.md`);
      for (const file of tsFilesUnder(`src/${room}`)) {
        const base = file.slice(file.lastIndexOf('/') + 1);
        if (readme.includes(`\`${file}\``) || readme.includes(`\`${base}\``)) named++;
        else missing.push(`src/${room}/${file}`);
      }
    }
    assert.deepEqual(missing, [], `these files are not named (in backticks) in their room's README.md: add a row to its table:\n  ${missing.join('\n  ')}`);
    assert.ok(named >= 60, `only ${named} files named by room READMEs: has their form changed?`);
  });

  it("design.md's Rooms table has a row for every room", () => {
    const design = read('docs/design.md');
    const table = design.slice(design.indexOf('\n## Rooms\n'), design.indexOf('\n## ', design.indexOf('\n## Rooms\n') + 1));
    const rows = table.split('\n').filter((l) => l.startsWith('| `'));
    for (const room of ROOMS) {
      assert.ok(
        rows.some((r) => (r.split('|')[1] as string).includes(`\`${room}/\``)),
        `src/${room}/ has a row in design.md, "Rooms"`,
      );
    }
  });

  it("every import from one room to another is one design.md's Rooms table allows", () => {
    const design = read('docs/design.md');
    const start = design.indexOf('\n## Rooms\n');
    const table = design.slice(start, design.indexOf('\n## ', start + 1));
    // A row's rooms are its first cell's `name/`; what they may import, the backticked names of its last.
    const allowed = new Map<string, string[]>();
    for (const row of table.split('\n').filter((l) => l.startsWith('| `'))) {
      const cells = row.split('|');
      const mayImport = [...(cells[3] as string).matchAll(/`([^`]+)`/g)].map((m) => m[1] as string);
      for (const m of (cells[1] as string).matchAll(/`([a-z-]+)\/`/g)) allowed.set(m[1] as string, mayImport);
    }
    let crossings = 0;
    const walk = (dir: string): string[] =>
      readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? walk(`${dir}/${e.name}`) : e.name.endsWith('.ts') ? [`${dir}/${e.name}`] : [],
      );
    for (const room of ROOMS) {
      for (const file of walk(`src/${room}`)) {
        for (const m of read(file).matchAll(/from '(\.[^']+)'/g)) {
          const target = posix.relative('src', posix.normalize(posix.join(posix.dirname(file), m[1] as string))).replace(/\.js$/, '.ts');
          if (target.startsWith(`${room}/`)) continue;
          crossings++;
          const targetRoom = target.includes('/') ? `${target.split('/')[0]}/` : target;
          if (allowed.get(room)?.some((a) => a === targetRoom || a === target)) continue;
          assert.fail(`${file.slice(4)} -> ${target}: design.md, "Rooms" does not let ${room}/ import ${target}`);
        }
      }
    }
    assert.ok(crossings >= 100, `only ${crossings} imports between rooms found: has the import form changed?`);
  });

  it('the rooms of src/ import each other in no circle: every arrow points down', () => {
    // A room is a folder or a file at the top of src/; an arrow, any import from one to another.
    const walk = (dir: string): string[] =>
      readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? walk(`${dir}/${e.name}`) : e.name.endsWith('.ts') ? [`${dir}/${e.name}`] : [],
      );
    const roomOf = (path: string) => path.split('/')[0] as string;
    const arrows = new Map<string, Set<string>>();
    for (const file of walk('src')) {
      const from = roomOf(file.slice(4));
      for (const m of read(file).matchAll(/from '(\.[^']+)'/g)) {
        const to = roomOf(posix.relative('src', posix.normalize(posix.join(posix.dirname(file), m[1] as string))));
        if (to !== from) arrows.set(from, (arrows.get(from) ?? new Set()).add(to));
      }
    }
    assert.ok(arrows.size >= 20, `only ${arrows.size} rooms import another: has the import form changed?`);
    // Depth-first: a room met again while it is still on the path closes a circle.
    const done = new Set<string>();
    const visit = (room: string, path: string[]) => {
      if (path.includes(room)) assert.fail(`import circle between rooms: ${[...path.slice(path.indexOf(room)), room].join(' -> ')}`);
      if (done.has(room)) return;
      for (const next of arrows.get(room) ?? []) visit(next, [...path, room]);
      done.add(room);
    };
    for (const room of arrows.keys()) visit(room, []);
  });

  it('the store, the hub and every service are built in one place, src/compose.ts', () => {
    const walk = (dir: string): string[] =>
      readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? walk(`${dir}/${e.name}`) : e.name.endsWith('.ts') ? [`${dir}/${e.name}`] : [],
      );
    // What a running service holds one of: built twice, two routes would count, wait or cap apart.
    const once =
      /new (?:ReturnAddressService|ApprovalService|ClaimService|Consumers|SenderPolicies|SigningSecrets|Capture|InProcessWakeupHub|InflightCaptureBudget|ClientDeliveryLimit|BlockList)\(|(?<!function )\bopenStore\(/g;
    let inCompose = 0;
    for (const file of walk('src')) {
      const built = [...read(file).matchAll(once)].map((m) => m[0]);
      if (file === 'src/compose.ts') inCompose = built.length;
      else assert.deepEqual(built, [], `${file} builds ${built.join(', ')}: only src/compose.ts builds the service's parts`);
    }
    assert.ok(inCompose >= 10, `src/compose.ts builds only ${inCompose} of the parts: has the form changed?`);
  });

  it('every pointer at design.md names one of its sections, in quotes, and none points at the old spec', () => {
    const sections = designSections();
    assert.ok(sections.length >= 20, `design.md has only ${sections.length} sections`);
    let pointers = 0;
    // This file's own messages quote the pointer's form, so it is left out.
    for (const file of pointerFiles().filter((f) => f !== 'test/docs/architecture.test.ts')) {
      // A pointer may wrap across comment lines: join them first.
      const text = read(file).replace(/\n\s*(?:\/\/|\*|#|--)?\s*/g, ' ');
      // The old pointers: a spec a clone does not have, and its numbering of the API.
      const old = /decisions\.md|\.\.\/shared\/|\bendpoints? #?\d/i.exec(text);
      assert.equal(old, null, `${file} says "${old?.[0]}": point at design.md by section, or name the route (METHOD path)`);
      for (const m of text.matchAll(/design\.md(?:'s)?,\s*(?!")(\S+)/g)) assert.fail(`${file}: "design.md, ${m[1]}…" names no section in quotes`);
      for (const m of text.matchAll(/design\.md(?:'s)?,?\s*"([^"]+)"((?:\s*(?:and|,)\s*"[^"]+")*)/g)) {
        const names = [m[1] as string, ...[...(m[2] ?? '').matchAll(/"([^"]+)"/g)].map((n) => n[1] as string)];
        for (const name of names) {
          pointers++;
          assert.ok(hasSection(sections, name), `${file} points at design.md, "${name}", which is no section of it`);
        }
      }
    }
    assert.ok(pointers >= 100, `found only ${pointers} pointers at design.md: has their form changed?`);
  });
});
