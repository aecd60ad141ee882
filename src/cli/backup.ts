// `return-address backup FILE`: SQLite's online backup of the store while the service runs
// (design.md, "Running it"); on PostgreSQL it says to use pg_dump.
import { resolve } from 'node:path';
import { AdminError } from '../storage/admin-store.js';
import { openAdminStore } from '../storage/open-admin-store.js';
import { adminConfig, BACKUP_HELP } from './admin.js';

export async function backupCommand(args: string[]): Promise<number> {
  if (args.includes('-h') || args.includes('--help')) {
    process.stdout.write(BACKUP_HELP);
    return 0;
  }
  if (args.length !== 1 || args[0]!.startsWith('-')) throw new AdminError(`backup takes exactly one FILE\n\n${BACKUP_HELP}`);
  const file = resolve(args[0]!);
  const store = await openAdminStore(adminConfig());
  try {
    const { bytes } = await store.backup(file);
    process.stderr.write(`backed up ${store.location} to ${file} (${bytes} bytes)\n`);
    return 0;
  } finally {
    await store.close();
  }
}
