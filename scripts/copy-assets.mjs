// Copies what tsc does not: the SQL migrations, next to the compiled stores that read them, the
// /inspect page's static files, the approval page's style sheet, and the Markdown the guides are rendered from. Then stamps the
// build (dist/.build-stamp): `npm start` and `return-address serve` compare the sources' times
// with it instead of compiling on every start.
import { cpSync, existsSync, writeFileSync } from 'node:fs';

for (const from of ['src/storage/sqlite/migrations', 'src/storage/postgres/migrations', 'src/inspect', 'src/docs/guides', 'src/approvals/assets']) {
  if (existsSync(from)) cpSync(from, `dist/${from}`, { recursive: true });
}
writeFileSync('dist/.build-stamp', `${new Date().toISOString()}\n`);
