// Numbered plain-SQL migrations, shared by both backends' runners: `0001_initial.sql`, …
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface MigrationFile {
  version: number;
  name: string;
  sql: string;
}

export function readMigrations(dir: string): MigrationFile[] {
  const files = readdirSync(dir).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).sort();
  // Numbers are assigned per branch and aligned across the two stores, so a store may skip some
  // (SQLite has no 0004-0006): ascending and unique is the rule, not contiguous.
  let previous = 0;
  return files.map((f) => {
    const version = Number(f.slice(0, 4));
    if (version <= previous) throw new Error(`migration ${f} is out of sequence: its number must be greater than ${previous}`);
    previous = version;
    return { version, name: f, sql: readFileSync(join(dir, f), 'utf8') };
  });
}
