// Writes the schema snapshots (src/storage/{sqlite,postgres}/schema.sql) from fresh databases
// migrated by the built stores: `npm run schema:dump` after adding or changing a migration.
// `--check` writes nothing and exits 1 with the first differing lines when a snapshot is stale.
// PostgreSQL: PG_ADMIN_URL (default postgres://postgres@127.0.0.1:5432/test) names a database to
// connect to; `pg_dump` must be on PATH and of the server's major version.
import { readFileSync, writeFileSync } from 'node:fs';
import { postgresSchemaSnapshot, sqliteSchemaSnapshot } from '../dist/src/storage/schema-snapshot.js';

const check = process.argv.includes('--check');
const adminUrl = process.env.PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const snapshots = [
  ['src/storage/sqlite/schema.sql', await sqliteSchemaSnapshot()],
  ['src/storage/postgres/schema.sql', await postgresSchemaSnapshot(adminUrl)],
];
let stale = 0;
for (const [file, text] of snapshots) {
  let current = '';
  try {
    current = readFileSync(file, 'utf8');
  } catch {}
  if (current === text) {
    console.log(`${file}: up to date`);
    continue;
  }
  if (!check) {
    writeFileSync(file, text);
    console.log(`${file}: written`);
    continue;
  }
  stale++;
  const a = current.split('\n'),
    b = text.split('\n');
  const at = a.findIndex((line, i) => line !== b[i]);
  console.error(`${file} is stale (run \`npm run schema:dump\`); first difference at line ${at + 1}:\n- ${a[at] ?? ''}\n+ ${b[at] ?? ''}`);
}
process.exit(stale ? 1 : 0);
