// The CLI's saved file keeps the store epoch with its cursor (saved-epoch.ts): after a real restore
// (restore-helper.ts; on SQLite the next event gets a sequence the saved cursor already passed),
// `events` and `consume` say so in one stderr line and read again from the start, and consume runs
// only the event it had not handled, skipping the ids it handled in an earlier run; `wait` waits from
// the start past those ids; an MCP Events cursor from before the restore starts again, truncated.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runCli } from '../forward/cli-process.js';
import { deliver, STORE } from '../helpers.js';
import { result } from '../mcp/mcp-modern-client.js';
import { restorableService, restorer } from './restore-helper.js';

describe(`the CLI and a restore (${STORE})`, () => {
  const s = restorableService();

  it('consume and events notice a new epoch, read again from the start and run each event id once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ra-cli-epoch-'));
    const file = join(dir, 'addr.json');
    const out = join(dir, 'handled.jsonl');
    const created = await runCli(['create', '--url', s.svc.baseUrl, '--save', file]);
    assert.equal(created.code, 0, created.stderr);
    const saved = () => JSON.parse(readFileSync(file, 'utf8'));
    const a = { id: saved().address.id, token: saved().credentials.read_token, inboxUrl: saved().endpoints.inbox_url };
    const handled = () =>
      readFileSync(out, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l).data);
    const consume = () => runCli(['consume', '--save', file, '--exec', `cat >> ${out}`, '--until-idle', '0']);

    const r = restorer(s.storage);
    for (let i = 1; i <= 2; i++) assert.equal((await deliver(s.svc.baseUrl, a as never, { data: i })).status, 202);
    await r.backup();
    assert.equal((await deliver(s.svc.baseUrl, a as never, { data: 3 })).status, 202);

    // An MCP Events cursor from this epoch, for after the restore.
    const mcpUrl = saved().endpoints.mcp_url;
    const polled = await result(mcpUrl, a.token, 'events/poll', { name: 'return_address.event', cursor: null });
    assert.equal(polled.events.length, 3);

    const first = await consume();
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(handled(), [1, 2, 3]);
    const before = saved();
    assert.equal(before.cursor, 3);
    assert.match(before.epoch, /^[0-9a-f]{32}$/, 'the epoch is saved with the cursor');
    assert.equal(before.handled.length, 3);

    s.svc = await r.restore(s.svc);
    const fresh = await deliver(s.svc.baseUrl, a as never, { data: 'new' });
    assert.equal(fresh.status, 202);
    if (STORE === 'sqlite') assert.equal(fresh.json.event.sequence, 3, 'a sequence the saved cursor passed');

    // events: from the start, one line; the file stays as it was without --advance.
    const page = await runCli(['events', '--save', file]);
    assert.equal(page.code, 0, page.stderr);
    assert.ok(
      JSON.parse(page.stdout).events.some((e: { data: unknown }) => e.data === 'new'),
      page.stdout,
    );
    assert.match(page.stderr, /events: the store's epoch changed from [0-9a-f]{32} to [0-9a-f]{32}/);
    assert.equal(saved().epoch, before.epoch);

    // wait: from the start, past the ids consume handled, to the new event; one line.
    const waited = await runCli(['wait', '--save', file, '--timeout', '5']);
    assert.equal(waited.code, 0, waited.stderr);
    assert.equal(JSON.parse(waited.stdout).data, 'new');
    assert.match(waited.stderr, /wait: the store's epoch changed/);

    // MCP: the old cursor is of another epoch: the poll starts again from the start, truncated.
    const again = await result(mcpUrl, a.token, 'events/poll', { name: 'return_address.event', cursor: polled.cursor });
    assert.equal(again.truncated, true);
    assert.ok(
      again.events.some((e: { data: { data: unknown } }) => e.data.data === 'new'),
      JSON.stringify(again.events),
    );
    assert.notEqual(again._meta['io.return-address/epoch'], polled._meta['io.return-address/epoch']);

    const second = await consume();
    assert.equal(second.code, 0, second.stderr);
    assert.equal(second.stderr.match(/epoch changed/g)?.length, 1, second.stderr);
    assert.match(second.stderr, /reading again from the start/);
    assert.deepEqual(handled(), [1, 2, 3, 'new'], 'only the new event ran');
    const after = saved();
    assert.notEqual(after.epoch, before.epoch);
    assert.equal(after.cursor, fresh.json.event.sequence);

    const third = await consume();
    assert.equal(third.code, 0, third.stderr);
    assert.doesNotMatch(third.stderr, /epoch/, 'the same epoch: no line');
    assert.deepEqual(handled(), [1, 2, 3, 'new']);
  });
});
