// `return-address subscribe`, run as a user runs it (the bin shim spawned against the real service,
// PUSH_ALLOW_PRIVATE so a local receiver may be the target): create with a generated secret that
// signs what arrives, list, show, resume, delete; bad usage is exit 1 naming the fix.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../forward/cli-process.js';
import { api, STORE, startTestService, type TestService } from '../helpers.js';
import { startReceiver, until, verify } from './receiver.js';

describe(`return-address subscribe (${STORE})`, () => {
  let svc: TestService;
  const dir = mkdtempSync(join(tmpdir(), 'ra-subscribe-cli-'));
  before(async () => {
    svc = await startTestService({ PUSH_ALLOW_PRIVATE: 'true' });
  });
  after(() => svc.stop());

  it('creates, lists, shows, resumes and deletes; the printed secret verifies what arrives', { timeout: 110_000 }, async () => {
    const rx = await startReceiver();
    try {
      const env = { RETURN_ADDRESS_URL: svc.baseUrl };
      const file = join(dir, 'a.json');
      assert.equal((await runCli(['create', '--save', file], env)).code, 0);
      const saved = JSON.parse(readFileSync(file, 'utf8'));
      const made = await runCli(['subscribe', '--save', file, rx.url, '--type', 'cli.*'], env);
      assert.equal(made.code, 0, made.stderr);
      const sub = JSON.parse(made.stdout);
      assert.match(sub.secret, /^whsec_/);
      await api(svc.baseUrl, 'POST', saved.endpoints.inbox_url, { json: { type: 'cli.ping', data: {} } });
      await until(() => rx.received.length >= 1, 10_000, 'a delivery');
      verify(rx.received[0]!, sub.secret);
      const list = await runCli(['subscribe', '--save', file, '--list'], env);
      assert.deepEqual(
        JSON.parse(list.stdout).subscriptions.map((s: { id: string }) => s.id),
        [sub.id],
      );
      assert.equal(JSON.parse((await runCli(['subscribe', '--save', file, '--show', sub.id], env)).stdout).consumer, `push:${sub.id}`);
      assert.equal((await runCli(['subscribe', '--save', file, '--resume', sub.id], env)).code, 0);
      assert.equal((await runCli(['subscribe', '--save', file, '--delete', sub.id], env)).code, 0);
      assert.deepEqual(JSON.parse((await runCli(['subscribe', '--save', file, '--list'], env)).stdout).subscriptions, []);
      const bad = await runCli(['subscribe', '--save', file], env);
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /give one of/);
      const refused = await runCli(['subscribe', '--save', file, 'ftp://x'], env);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /url/);
    } finally {
      await rx.close();
    }
  });
});
