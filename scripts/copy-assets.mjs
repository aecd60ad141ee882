// Copies what tsc does not: the SQL migrations, next to the compiled stores that read them, and
// the /inspect page's static files.
import { cpSync, existsSync } from 'node:fs';

for (const from of ['src/storage/sqlite/migrations', 'src/storage/postgres/migrations', 'src/inspect', 'src/approvals/assets']) {
  if (existsSync(from)) cpSync(from, `dist/${from}`, { recursive: true });
}
