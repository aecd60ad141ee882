// Schema versions (design.md, "Running it"): numbers aligned across the stores may leave gaps, each migration
// applied is logged, and a database migrated by a newer release is refused, naming both versions:
// by the store (no handle or pool left behind) and by the process (exit 1, one line on stderr).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import type { Log } from '../../src/domain/ports.js';
import { readMigrations, SchemaTooNewError } from '../../src/storage/migration-files.js';
import { openStore, SQLITE_FILE } from '../../src/storage/open-store.js';
import { createTestStorage, STORE, type TestStorage } from '../helpers.js';

const MIGRATIONS = `src/storage/${STORE}/migrations`;
const STORE_NAME = STORE === 'sqlite' ? 'SQLite' : 'PostgreSQL';

function capturingLog(): Log & { lines: { level: string; obj: Record<string, unknown>; msg: string }[] } {
  const lines: { level: string; obj: Record<string, unknown>; msg: string }[] = [];
  const at = (level: string) => (obj: object, msg: string) => {
    lines.push({ level, obj: obj as Record<string, unknown>, msg });
  };
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** Records a migration number in the store's schema_migrations, as a newer release would have. */
async function recordMigration(storage: TestStorage, version: number, name: string): Promise<void> {
  if (STORE === 'sqlite') {
    const db = new Database(join(storage.dataDir, SQLITE_FILE));
    db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(version, name, Date.now());
    db.close();
    return;
  }
  const c = new pg.Client({ connectionString: storage.databaseUrl });
  await c.connect();
  await c.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [version, name]);
  await c.end();
}

describe('migration files', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'ra-migrations-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('are ordered by number, with gaps allowed (a number used by the other store only)', () => {
    for (const f of ['0010_ten.sql', '0002_two.sql', '0001_one.sql', '0006_six.sql', 'README.md']) writeFileSync(join(dir, f), '-- x');
    assert.deepEqual(
      readMigrations(dir).map((m) => m.name),
      ['0001_one.sql', '0002_two.sql', '0006_six.sql', '0010_ten.sql'],
    );
    assert.deepEqual(
      readMigrations(dir).map((m) => m.version),
      [1, 2, 6, 10],
    );
  });

  it('refuse two files with one number, naming both', () => {
    writeFileSync(join(dir, '0006_other.sql'), '-- y');
    assert.throws(() => readMigrations(dir), /migrations 0006_other\.sql and 0006_six\.sql share the number 6/);
  });
});

describe(`schema versions on ${STORE}`, () => {
  let storage: TestStorage;
  before(async () => {
    storage = await createTestStorage();
  });
  after(async () => {
    await storage.drop();
  });

  const config = () => loadConfig({ ...storage.env, PORT: '0', SMTP_PORT: '0' });

  it('logs each migration it applies, once', async () => {
    const log = capturingLog();
    const store = await openStore(config(), log);
    await store.close();
    const applied = log.lines.filter((l) => l.msg === `applied ${STORE_NAME} migration`);
    assert.deepEqual(
      applied.map((l) => l.obj.migration),
      readMigrations(MIGRATIONS).map((m) => m.name),
    );
    assert.ok(applied.every((l) => l.level === 'info' && typeof l.obj.ms === 'number'));
    const again = capturingLog();
    await (await openStore(config(), again)).close();
    assert.deepEqual(
      again.lines.filter((l) => l.msg.startsWith('applied')),
      [],
      'a migrated database applies nothing',
    );
  });

  it('refuses a database migrated by a newer release, naming both versions, and leaves nothing open', async () => {
    const known = readMigrations(MIGRATIONS).at(-1)?.version ?? 0;
    await recordMigration(storage, 9999, '9999_from_a_newer_release.sql');
    await assert.rejects(openStore(config(), capturingLog()), (err: unknown) => {
      assert.ok(err instanceof SchemaTooNewError);
      assert.equal(err.databaseVersion, 9999);
      assert.equal(err.releaseVersion, known);
      assert.match(
        err.message,
        new RegExp(
          `the ${STORE_NAME} database's schema is at migration 9999 \\(9999_from_a_newer_release\\.sql\\), newer than this release knows \\(its highest migration is ${String(known).padStart(4, '0')}\\)`,
        ),
      );
      return true;
    });
    // storage.drop() (after) asserts no PostgreSQL connection was left open by the refused start.
  });

  it('the process exits 1 with one line naming both versions', async () => {
    const env = { ...process.env, ...storage.env, PORT: '0', SMTP_PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent' };
    const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = execFile(process.execPath, ['dist/src/server.js'], { env, timeout: 30_000 }, (err, _out, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stderr });
      });
      child.stdin?.end();
    });
    assert.equal(code, 1);
    const lines = stderr.trim().split('\n');
    assert.equal(lines.length, 1, stderr);
    assert.match(
      lines[0] ?? '',
      /^return-address: refusing to start: the (SQLite|PostgreSQL) database's schema is at migration 9999 .* \(its highest migration is \d{4}\)/,
    );
    console.log(`  ${STORE}: ${lines[0]}`);
  });
});
