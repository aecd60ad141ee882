// Numbered plain-SQL migrations, shared by both backends' runners: `0001_initial.sql`, …
//
// Numbers are aligned across the two stores (docs/design.md, "Running it"): a migration that exists for one store
// only leaves a gap in the other's numbers, so files are applied in number order and a gap is
// fine. What is not fine is a database that has recorded a number this release does not know
// beyond its own last one: a newer release migrated it, and this one would run against a schema
// it cannot read (a rollback without a restore), so the runners refuse to start.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface MigrationFile {
  version: number;
  name: string;
  sql: string;
}

export function readMigrations(dir: string): MigrationFile[] {
  const files = readdirSync(dir).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f));
  const migrations = files
    .map((f) => ({ version: Number(f.slice(0, 4)), name: f, sql: readFileSync(join(dir, f), 'utf8') }))
    .sort((a, b) => a.version - b.version);
  migrations.forEach((m, i) => {
    const before = migrations[i - 1];
    if (before?.version === m.version) throw new Error(`migrations ${before.name} and ${m.name} share the number ${m.version}`);
  });
  if (migrations[0]?.version === 0) throw new Error(`migration ${migrations[0].name}: numbers start at 0001`);
  return migrations;
}

/** The highest migration number of a list (0 for none). */
export function highestVersion(versions: Iterable<number>): number {
  let max = 0;
  for (const v of versions) if (v > max) max = v;
  return max;
}

export function formatVersion(version: number): string {
  return String(version).padStart(4, '0');
}

/** A database migrated by a newer release: starting on it could misread or corrupt its data. */
export class SchemaTooNewError extends Error {
  constructor(
    readonly store: 'SQLite' | 'PostgreSQL',
    readonly databaseVersion: number,
    readonly databaseMigration: string | undefined,
    readonly releaseVersion: number,
  ) {
    super(
      `the ${store} database's schema is at migration ${formatVersion(databaseVersion)}` +
        `${databaseMigration ? ` (${databaseMigration})` : ''}, newer than this release knows ` +
        `(its highest migration is ${formatVersion(releaseVersion)}): a newer release migrated it. ` +
        'Run that release (or newer), or restore a backup taken before the upgrade to roll back.',
    );
    this.name = 'SchemaTooNewError';
  }
}

/**
 * Refuses a database whose highest recorded migration is above the release's highest file.
 * `applied` maps each recorded number to its file name.
 */
export function assertSchemaNotNewer(store: 'SQLite' | 'PostgreSQL', applied: Map<number, string>, known: MigrationFile[]): void {
  const databaseVersion = highestVersion(applied.keys());
  const releaseVersion = highestVersion(known.map((m) => m.version));
  if (databaseVersion > releaseVersion) {
    throw new SchemaTooNewError(store, databaseVersion, applied.get(databaseVersion), releaseVersion);
  }
}
