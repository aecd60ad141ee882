// `return-address admin` and `backup` as an operator runs them: the bin shim spawned beside a live
// service on the same store; a deletion takes effect on the running service at once (its caches,
// its inbox, a long-poll held on the address).
import assert from 'node:assert/strict';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { type Addr, api, createAddress, deliver, STORE, startTestService, type TestService } from '../helpers.js';
import { cli } from './admin-cli.js';

describe('return-address admin and backup', () => {
  let svc: TestService;
  let env: Record<string, string>;
  let a: Addr;
  let b: Addr;
  before(async () => {
    svc = await startTestService();
    env = svc.storage.env;
    a = await createAddress(svc.baseUrl, { name: 'alpha' });
    b = await createAddress(svc.baseUrl, { name: 'beta' });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await deliver(svc.baseUrl, a, { data: { i } })).json.event.id);
    await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/events/${ids[0]}/ack`, { token: a.token });
  });
  after(() => svc.stop());

  it('list: a table for people, --json for scripts, with the creating IP, events and bytes', async () => {
    const table = await cli(['admin', 'list'], env);
    assert.equal(table.code, 0, table.stderr);
    process.stdout.write(`--- return-address admin list (${STORE}) ---\n${table.stdout}`);
    const lines = table.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^ID\s+NAME\s+CREATED_AT\s+EXPIRES_AT\s+CREATED_IP\s+EVENTS\s+UNACKNOWLEDGED\s+BYTES$/);
    assert.equal(lines.length, 3);
    assert.match(lines.find((l) => l.startsWith(a.id))!, /alpha .*127\.0\.0\.1\s+3\s+2\s+\d+$/);

    const json = await cli(['admin', 'list', '--json'], env);
    assert.equal(json.code, 0, json.stderr);
    const rows = json.json.addresses as { id: string; created_ip: string; events: number; unacknowledged: number; bytes: number }[];
    assert.deepEqual(rows.map((r) => r.id).sort(), [a.id, b.id].sort());
    const ra = rows.find((r) => r.id === a.id)!;
    assert.deepEqual([ra.created_ip, ra.events, ra.unacknowledged], ['127.0.0.1', 3, 2]);
    assert.ok(ra.bytes > 0);
    const byIp = await cli(['admin', 'list', '--json', '--ip', '10.9.9.9'], env);
    assert.deepEqual(byIp.json.addresses, []);
    const limited = await cli(['admin', 'list', '--json', '--limit', '1'], env);
    assert.equal(limited.json.addresses.length, 1);
  });

  it('show and stats', async () => {
    const show = await cli(['admin', 'show', b.id, '--json'], env);
    assert.equal(show.code, 0, show.stderr);
    assert.equal(show.json.address.name, 'beta');
    const text = await cli(['admin', 'show', b.id], env);
    assert.match(text.stdout, /^created_ip\s+127\.0\.0\.1$/m);
    const stats = await cli(['admin', 'stats', '--json'], env);
    assert.equal(stats.code, 0, stats.stderr);
    assert.deepEqual([stats.json.addresses, stats.json.events, stats.json.unacknowledged], [2, 3, 2]);
    assert.deepEqual(stats.json.top_creators, [{ created_ip: '127.0.0.1', addresses: 2 }]);
    const human = await cli(['admin', 'stats'], env);
    assert.match(human.stdout, /^addresses\s+2$/m);
  });

  it('delete takes effect on the running service at once: reads, the inbox and a held long-poll', async () => {
    // Warm the service's caches with the address (SQLite holds it in memory).
    assert.equal((await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}`, { token: a.token })).status, 200);
    assert.equal((await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events?after=0`, { token: a.token })).status, 200);
    const held = api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events?after=3&wait=20`, { token: a.token });
    await new Promise((r) => setTimeout(r, 200));
    const t0 = Date.now();
    const del = await cli(['admin', 'delete', a.id], env);
    assert.equal(del.code, 0, del.stderr);
    assert.equal(del.stdout, `deleted ${a.id} and its events\n`);
    assert.equal((await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}`, { token: a.token })).status, 404);
    assert.equal((await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events?after=0`, { token: a.token })).status, 404);
    assert.equal((await deliver(svc.baseUrl, a, { data: 'late' })).status, 404);
    const poll = await held;
    assert.equal(poll.status, 404);
    assert.ok(Date.now() - t0 < 10_000, 'the held long-poll ended with the deletion, not its 20 s wait');
    // The other address is untouched.
    assert.equal((await deliver(svc.baseUrl, b, { data: 'still here' })).status, 202);

    const again = await cli(['admin', 'delete', a.id], env);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /no address/);
    assert.equal((await cli(['admin', 'show', a.id], env)).code, 1);
  });

  it('usage errors and a missing store say so and exit 1', async () => {
    const unknown = await cli(['admin', 'frobnicate'], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /unknown admin command/);
    assert.equal((await cli(['admin', 'show'], env)).code, 1);
    assert.equal((await cli(['admin', 'list', '--limit', '0'], env)).code, 1);
    const missing =
      STORE === 'sqlite'
        ? await cli(['admin', 'list'], { DATA_DIR: join(tmpdir(), 'ra-no-such-store-dir') })
        : await cli(['admin', 'list'], { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/ra_no_such_database' });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, STORE === 'sqlite' ? /no store at .*ra-no-such-store-dir/ : /cannot reach the store/);
    assert.equal((await cli(['admin', '--help'], env)).code, 0);
  });

  it('backup: an online SQLite copy while the service writes; PostgreSQL says pg_dump', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'ra-backup-')), 'copy.sqlite');
    if (STORE === 'postgres') {
      const r = await cli(['backup', file], env);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /pg_dump/);
      return;
    }
    let writing = true;
    const writer = (async () => {
      let n = 0;
      while (writing) {
        assert.equal((await deliver(svc.baseUrl, b, { data: n++ })).status, 202);
      }
      return n;
    })();
    const r = await cli(['backup', file], env);
    writing = false;
    const written = await writer;
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /backed up .* \(\d+ bytes\)/);
    // The copy holds every event: private like the store itself, whatever the umask.
    assert.equal(statSync(file).mode & 0o777, 0o600, `the backup's mode is ${(statSync(file).mode & 0o777).toString(8)}`);
    const copy = new Database(file, { readonly: true });
    try {
      assert.equal(copy.pragma('integrity_check', { simple: true }), 'ok');
      assert.equal(copy.prepare('SELECT count(*) FROM addresses').pluck().get(), 1);
      const events = copy.prepare('SELECT count(*) FROM events').pluck().get() as number;
      assert.ok(events >= 1 && events <= written + 1, `${events} events in the copy`);
    } finally {
      copy.close();
    }
    const exists = await cli(['backup', file], env);
    assert.equal(exists.code, 1);
    assert.match(exists.stderr, /exists/);
  });
});
