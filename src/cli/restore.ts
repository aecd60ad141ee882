// `return-address restore FILE` (design.md, "Store epoch"): a backup back in place, with the
// service stopped, and a new store epoch so that readers notice; on PostgreSQL, `--new-epoch` after
// pg_restore.
import { AdminError } from '../storage/admin-store.js';
import { newPostgresEpoch, restoreSqlite } from '../storage/restore.js';
import { adminConfig } from './admin.js';

export const RESTORE_HELP = `Usage: return-address restore FILE        (SQLite)
       return-address restore --new-epoch     (PostgreSQL, after pg_restore)

Puts the backup FILE (written by \`return-address backup\`) in place of the SQLite store under
DATA_DIR, with the service stopped: refused while any process has the database open. The file is
checked first, written 0600, and the store gets a new epoch: every reader that sees it re-reads its
address from the start, skipping event ids it has handled (sequences after the backup's are given
again, to new events). Start the service afterwards.
On PostgreSQL (DATABASE_URL) restore with pg_restore, with every instance stopped, then run
\`return-address restore --new-epoch\`: it only replaces the epoch. Exit codes: 0 success, 1 error.
`;

export async function restoreCommand(args: string[]): Promise<number> {
  if (args.includes('-h') || args.includes('--help')) {
    process.stdout.write(RESTORE_HELP);
    return 0;
  }
  const config = adminConfig();
  if (config.databaseUrl !== undefined) {
    if (args.length !== 1 || args[0] !== '--new-epoch') {
      throw new AdminError(
        `on PostgreSQL, restore the dump with pg_restore (every instance stopped), then run: return-address restore --new-epoch\n\n${RESTORE_HELP}`,
      );
    }
    const epoch = await newPostgresEpoch(config);
    process.stderr.write(`the store's epoch is now ${epoch}: readers will re-read from the start\n`);
    return 0;
  }
  if (args.length !== 1 || args[0]!.startsWith('-')) throw new AdminError(`restore takes exactly one FILE\n\n${RESTORE_HELP}`);
  const { epoch, bytes } = restoreSqlite(config.dataDir, args[0]!);
  process.stderr.write(`restored ${args[0]} (${bytes} bytes); the store's epoch is now ${epoch}: start the service\n`);
  return 0;
}
