// A real restore for the readers' tests (the CLI, the forwarder, the Python client), as an operator
// runs it: on SQLite `return-address backup FILE` first, then, with the service stopped,
// `return-address restore FILE` (the queue goes back to the backup, sequences after it are given
// again); on PostgreSQL, with the service stopped, `restore --new-epoch` (what follows a pg_restore;
// the rows stay, only the epoch changes). Either way the service starts again on the same ports.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { runCli } from '../forward/cli-process.js';
import { createTestStorage, type SpawnedService, STORE, spawnService, type TestStorage } from '../helpers.js';

/**
 * For one describe(): a spawned service on storage of its own, started before its tests and
 * stopped and dropped after them. `svc` is the service now running (a restore replaces it).
 */
export function restorableService(): { storage: TestStorage; svc: SpawnedService } {
  const state = {} as { storage: TestStorage; svc: SpawnedService };
  before(async () => {
    state.storage = await createTestStorage();
    state.svc = await spawnService({}, state.storage);
  });
  after(async () => {
    await stopService(state.svc);
    await state.storage.drop();
  });
  return state;
}

export async function stopService(svc: SpawnedService): Promise<void> {
  svc.proc.kill('SIGTERM');
  await svc.exited;
}

export interface Restorer {
  /** SQLite: takes the backup a later restore puts back; PostgreSQL: nothing (the rows stay). */
  backup(): Promise<void>;
  /** Stops `svc`, restores, and starts the service again on its ports. */
  restore(svc: SpawnedService): Promise<SpawnedService>;
}

export function restorer(storage: TestStorage): Restorer {
  const file = join(mkdtempSync(join(tmpdir(), 'ra-restore-')), 'backup.sqlite');
  return {
    async backup() {
      if (STORE !== 'sqlite') return;
      const r = await runCli(['backup', file], storage.env);
      assert.equal(r.code, 0, r.stderr);
    },
    async restore(svc) {
      await stopService(svc);
      const r = await runCli(STORE === 'sqlite' ? ['restore', file] : ['restore', '--new-epoch'], storage.env);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /epoch is now [0-9a-f]{32}/);
      return spawnService({}, storage, { port: svc.port, smtpPort: svc.smtpPort });
    },
  };
}
