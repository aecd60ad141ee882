// Copies what tsc does not: the SQL migrations, next to the compiled stores that read them.
import { cpSync, existsSync } from 'node:fs';

for (const backend of ['sqlite', 'postgres']) {
  const from = `src/storage/${backend}/migrations`;
  if (existsSync(from)) cpSync(from, `dist/${from}`, { recursive: true });
}
