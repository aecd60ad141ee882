// Opens the operator's view of the store the configuration names (admin-store.ts): PostgreSQL when
// DATABASE_URL is set, else the SQLite file under DATA_DIR, as open-store.ts picks the service's.
import { join, resolve } from 'node:path';
import type { Config } from '../config.js';
import type { AdminStore } from './admin-store.js';
import { SQLITE_FILE } from './open-store.js';
import { PostgresAdmin } from './postgres/postgres-admin.js';
import { SqliteAdmin } from './sqlite/sqlite-admin.js';

export async function openAdminStore(config: Config): Promise<AdminStore> {
  if (config.databaseUrl !== undefined) return PostgresAdmin.open(config.databaseUrl);
  return SqliteAdmin.open(join(resolve(config.dataDir), SQLITE_FILE));
}
