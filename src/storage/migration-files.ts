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
  return files.map((f, i) => {
    const version = Number(f.slice(0, 4));
    if (version !== i + 1) throw new Error(`migration ${f} is out of sequence: expected number ${i + 1}`);
    return { version, name: f, sql: readFileSync(join(dir, f), 'utf8') };
  });
}
