// `return-address policy`, run as a user runs it (the bin shim spawned against the real service):
// it sets, shows and removes the sender policy, and releases a quarantined event, so an agent
// needs no hand-written curl to lock its address to the senders it expects.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type CliRun, runCli } from '../forward/cli-process.js';
import { api, STORE, startTestService, type TestService } from '../helpers.js';

/** The CLI's run, with stdout parsed as JSON when it is. */
async function cli(args: string[], env: Record<string, string>): Promise<CliRun & { json: any }> {
  const run = await runCli(args, env);
  let json: unknown;
  try {
    json = run.stdout ? JSON.parse(run.stdout) : undefined;
  } catch {
    json = undefined;
  }
  return { ...run, json };
}

describe(`return-address policy (${STORE})`, () => {
  let svc: TestService;
  let env: Record<string, string>;
  const dir = mkdtempSync(join(tmpdir(), 'ra-policy-cli-'));
  before(async () => {
    svc = await startTestService();
    env = { RETURN_ADDRESS_URL: svc.baseUrl };
  });
  after(async () => {
    await svc.stop();
  });

  it('sets, shows and removes the policy; a quarantined capture is released by id; bad usage is exit 1', { timeout: 110_000 }, async () => {
    const file = join(dir, 'a.json');
    assert.equal((await cli(['create', '--save', file], env)).code, 0);
    const saved = JSON.parse(readFileSync(file, 'utf8'));
    const id = saved.address.id as string;
    const token = saved.credentials.read_token as string;

    const none = await cli(['policy', '--save', file], env);
    assert.equal(none.code, 0, none.stderr);
    assert.equal(none.json.sender_policy, null);

    const set = await cli(
      ['policy', '--save', file, '--allow', 'Example.com', '--allow', 'alice@example.org', '--require', 'dkim', '--require-signature'],
      env,
    );
    assert.equal(set.code, 0, set.stderr);
    assert.deepEqual(set.json.sender_policy, { email: { allow: ['example.com', 'alice@example.org'], require: 'dkim' }, capture: { require_signature: true } });
    assert.deepEqual((await cli(['policy', '--save', file], env)).json.sender_policy, set.json.sender_policy, 'shown as set');

    // An unsigned capture fails require_signature: stored, quarantined, skipped by a default read.
    const hook = saved.endpoints.hook_url as string;
    const captured = await fetch(hook, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"ok":true}' });
    assert.equal(captured.status, 202);
    const { event } = (await captured.json()) as { event: { id: string } };
    const plain = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${id}/events`, { token });
    assert.deepEqual(plain.json.events, [], 'a default read skips the quarantined capture');
    const released = await cli(['policy', '--save', file, '--release', event.id], env);
    assert.equal(released.code, 0, released.stderr);
    assert.equal(released.json.id, event.id);
    assert.ok(released.json.released_at, 'released_at is set');
    const after = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${id}/events`, { token });
    assert.deepEqual(
      after.json.events.map((e: { id: string }) => e.id),
      [event.id],
      'released: read by default',
    );

    const bad = await cli(['policy', '--save', file, '--require', 'spf'], env);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /require/, 'the service names the field');
    const both = await cli(['policy', '--save', file, '--delete', '--allow', 'x.com'], env);
    assert.equal(both.code, 1);
    assert.match(both.stderr, /give one of/);
    const json = await cli(['policy', '--save', file, '--json', '{not json'], env);
    assert.equal(json.code, 1);
    assert.match(json.stderr, /--json: not valid JSON/);

    const removed = await cli(['policy', '--save', file, '--delete'], env);
    assert.equal(removed.code, 0, removed.stderr);
    assert.equal((await cli(['policy', '--save', file], env)).json.sender_policy, null);
  });
});
