// `return-address restore` as an operator runs it (the bin shim spawned beside a spawned service):
// refused while the service has the store open; with it stopped, the backup is put back (0600) and
// the store gets a new epoch, which the restarted service's pages say, with a last sequence below a
// reader's old cursor. On PostgreSQL, restore says pg_restore and `--new-epoch` replaces the epoch.
import assert from 'node:assert/strict';
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../forward/cli-process.js';
import { api, createAddress, createTestStorage, deliver, listEvents, type SpawnedService, STORE, spawnService, type TestStorage } from '../helpers.js';

async function stop(svc: SpawnedService): Promise<void> {
  svc.proc.kill('SIGTERM');
  await svc.exited;
}

describe(`return-address restore (${STORE})`, () => {
  let storage: TestStorage;
  before(async () => {
    storage = await createTestStorage();
  });
  after(async () => {
    await storage.drop();
  });

  it('SQLite: refused while the service runs; with it stopped the backup comes back with a new epoch', {
    skip: STORE !== 'sqlite' && 'SQLite only',
  }, async () => {
    let svc = await spawnService({}, storage);
    const a = await createAddress(svc.baseUrl);
    for (let i = 1; i <= 2; i++) assert.equal((await deliver(svc.baseUrl, a, { data: i })).status, 202);
    const dir = mkdtempSync(join(tmpdir(), 'ra-restore-'));
    const file = join(dir, 'backup.sqlite');
    const backup = await runCli(['backup', file], storage.env);
    assert.equal(backup.code, 0, backup.stderr);
    for (let i = 3; i <= 5; i++) await deliver(svc.baseUrl, a, { data: i });
    const before = await listEvents(svc.baseUrl, a);
    const oldEpoch = before.headers.get('return-address-epoch');
    assert.equal(before.headers.get('return-address-last-sequence'), '5');

    const refused = await runCli(['restore', file], storage.env);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /in use .*stop the service first/);
    assert.equal((await listEvents(svc.baseUrl, a)).json.events.length, 5, 'the running store is untouched');

    const junk = join(dir, 'junk');
    writeFileSync(junk, 'not a database');
    await stop(svc);
    const bad = await runCli(['restore', junk], storage.env);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /junk/);

    const restored = await runCli(['restore', file], storage.env);
    assert.equal(restored.code, 0, restored.stderr);
    assert.match(restored.stderr, /epoch is now [0-9a-f]{32}/);
    assert.equal(statSync(join(storage.dataDir, 'return-address.sqlite')).mode & 0o777, 0o600);

    svc = await spawnService({}, storage, { port: svc.port, smtpPort: svc.smtpPort });
    try {
      const page = await listEvents(svc.baseUrl, a, { after: 5 });
      assert.deepEqual(page.json, { events: [], next_cursor: 5, has_more: false });
      const epoch = page.headers.get('return-address-epoch');
      assert.match(epoch ?? '', /^[0-9a-f]{32}$/);
      assert.notEqual(epoch, oldEpoch, 'a restore gives a new epoch');
      assert.equal(page.headers.get('return-address-last-sequence'), '2', 'the reader at 5 can see it is ahead');
      const fromStart = await listEvents(svc.baseUrl, a);
      assert.deepEqual(
        fromStart.json.events.map((e: { data: unknown }) => e.data),
        [1, 2],
      );
      assert.equal((await deliver(svc.baseUrl, a, { data: 'new' })).json.event.sequence, 3, 'sequence 3 is given again');
    } finally {
      await stop(svc);
    }
  });

  it('PostgreSQL: restore FILE points at pg_restore; --new-epoch replaces the epoch', { skip: STORE !== 'postgres' && 'PostgreSQL only' }, async () => {
    let svc = await spawnService({}, storage);
    const a = await createAddress(svc.baseUrl);
    const oldEpoch = (await listEvents(svc.baseUrl, a)).headers.get('return-address-epoch');
    await stop(svc);
    const file = await runCli(['restore', 'dump.file'], storage.env);
    assert.equal(file.code, 1);
    assert.match(file.stderr, /pg_restore/);
    const rotated = await runCli(['restore', '--new-epoch'], storage.env);
    assert.equal(rotated.code, 0, rotated.stderr);
    svc = await spawnService({}, storage, { port: svc.port, smtpPort: svc.smtpPort });
    try {
      const epoch = (await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events`, { token: a.token })).headers.get('return-address-epoch');
      assert.match(epoch ?? '', /^[0-9a-f]{32}$/);
      assert.notEqual(epoch, oldEpoch);
    } finally {
      await stop(svc);
    }
  });
});
