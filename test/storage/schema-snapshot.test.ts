// The checked-in schema snapshot (src/storage/<store>/schema.sql) is what this release's
// migrations make of a fresh database: a migration added or changed without `npm run schema:dump`
// fails here, on the store under test.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { it } from 'node:test';
import { postgresSchemaSnapshot, sqliteSchemaSnapshot } from '../../src/storage/schema-snapshot.js';
import { PG_ADMIN_URL, STORE } from '../helpers.js';

function pgDumpMissing(): string | false {
  try {
    execFileSync('pg_dump', ['--version']);
    return false;
  } catch {
    return 'pg_dump is not installed (the postgresql-client package)';
  }
}

it(`src/storage/${STORE}/schema.sql matches a fresh ${STORE} database (else run \`npm run schema:dump\`)`, {
  skip: STORE === 'postgres' && pgDumpMissing(),
}, async () => {
  const fresh = STORE === 'sqlite' ? await sqliteSchemaSnapshot() : await postgresSchemaSnapshot(PG_ADMIN_URL);
  const checkedIn = readFileSync(`src/storage/${STORE}/schema.sql`, 'utf8');
  assert.equal(fresh, checkedIn, `src/storage/${STORE}/schema.sql is stale: run \`npm run schema:dump\` and commit it`);
  assert.match(checkedIn, /CREATE TABLE (public\.)?events/);
});
