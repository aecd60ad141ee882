// What a service says at start (design.md, "Running it"): one line with the settings in force and no secret
// in it, a warning when BASE_URL is unset while listening beyond loopback, and health probes
// logged at debug (not at info, where they would drown the log every few seconds).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { redactDatabaseUrl, settingsForLog } from '../../src/startup-settings.js';
import { createTestStorage, STORE, spawnService } from '../helpers.js';

interface LogLine {
  level: number;
  msg: string;
  settings?: Record<string, unknown>;
  req?: { url: string };
}

function lines(output: string): LogLine[] {
  return output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
}

describe('the settings line', () => {
  it('redacts DATABASE_URL passwords and any token or secret list', () => {
    assert.equal(
      redactDatabaseUrl('postgres://ra:hunter2@db.internal:5432/ra?sslmode=require&password=x'),
      'postgres://ra:[REDACTED]@db.internal:5432/ra?sslmode=require&password=[REDACTED]',
    );
    assert.equal(redactDatabaseUrl('postgres://ra@db/ra'), 'postgres://ra@db/ra');
    const config = { ...loadConfig({ DATABASE_URL: 'postgres://u:pw@h/d' }), createTokens: ['t1', 't2'], webhookSecret: 's' } as unknown as Parameters<
      typeof settingsForLog
    >[0];
    const settings = settingsForLog(config);
    assert.equal(settings.databaseUrl, 'postgres://u:[REDACTED]@h/d');
    assert.equal(settings.createTokens, '[REDACTED: 2 set]');
    assert.equal(settings.webhookSecret, '[REDACTED]');
    assert.equal(settings.store, 'postgres');
    assert.equal(settings.port, 3000);
    assert.doesNotMatch(JSON.stringify(settings), /pw@|"t1"|"s"/);
    // The push key sits in a group of settings (config.push): redacted all the same.
    const key = Buffer.alloc(32, 9).toString('base64');
    const push = settingsForLog(loadConfig({ PUSH_SEAL_KEY: key, PUSH_ALLOW_PRIVATE: 'true' })).push as Record<string, unknown>;
    assert.equal(push.sealSecret, '[REDACTED]');
    assert.equal(push.allowPrivate, true, 'the rest of the group is logged');
    assert.doesNotMatch(JSON.stringify(push), new RegExp(key.slice(0, 12)));
  });

  it(`a real start (${STORE}) logs it once, warns about an unset BASE_URL beyond loopback, and logs probes at debug only`, { timeout: 60_000 }, async () => {
    const storage = await createTestStorage();
    // A password in DATABASE_URL (trust authentication ignores it) must not reach the log.
    const env: Record<string, string> = { HOST: '0.0.0.0', BASE_URL: '', LOG_LEVEL: 'info' };
    if (storage.databaseUrl) env.DATABASE_URL = storage.databaseUrl.replace('postgres@', 'postgres:hunter2-secret@');
    const svc = await spawnService(env, storage);
    try {
      for (let i = 0; i < 3; i++) {
        assert.equal((await fetch(`${svc.baseUrl}/healthz`)).status, 200);
        assert.equal((await fetch(`${svc.baseUrl}/readyz`)).status, 200);
      }
      assert.equal((await fetch(`${svc.baseUrl}/api/v1/nothing-here`)).status, 404); // an ordinary request still logs at info
      await new Promise((r) => setTimeout(r, 200));
      const log = lines(svc.output());
      const settings = log.filter((l) => l.msg === 'settings in force');
      assert.equal(settings.length, 1, 'one settings line');
      assert.equal(settings[0]?.level, 30);
      assert.equal(settings[0]?.settings?.host, '0.0.0.0');
      assert.equal(settings[0]?.settings?.store, STORE);
      assert.equal(settings[0]?.settings?.baseUrlConfigured, false);
      assert.doesNotMatch(svc.output(), /hunter2-secret/);
      if (storage.databaseUrl) assert.match(String(settings[0]?.settings?.databaseUrl), /postgres:\[REDACTED\]@/);
      const warning = log.filter((l) => l.level === 40 && l.msg.startsWith('BASE_URL is unset while listening on 0.0.0.0'));
      assert.equal(warning.length, 1, 'one BASE_URL warning');
      assert.match(warning[0]?.msg ?? '', /Set BASE_URL to the public origin/);
      const probes = log.filter((l) => /^\/(healthz|readyz)/.test(l.req?.url ?? ''));
      assert.deepEqual(probes, [], 'probes are not logged at info');
      assert.ok(
        log.some((l) => l.req?.url === '/api/v1/nothing-here'),
        'other requests are',
      );
    } finally {
      svc.proc.kill('SIGTERM');
      await svc.exited;
    }
    // The same probes at LOG_LEVEL=debug are logged (so the check above could fail), and with
    // BASE_URL set there is no warning.
    const debug = await spawnService({ HOST: '0.0.0.0', LOG_LEVEL: 'debug' }, storage);
    try {
      await fetch(`${debug.baseUrl}/readyz`);
      await new Promise((r) => setTimeout(r, 200));
      const log = lines(debug.output());
      assert.ok(
        log.some((l) => l.req?.url === '/readyz' && l.level === 20 && l.msg === 'health probe answered'),
        'a probe logs at debug',
      );
      assert.ok(!log.some((l) => l.req?.url === '/readyz' && l.level > 20), 'and only at debug');
      assert.equal(log.filter((l) => l.msg.startsWith('BASE_URL is unset')).length, 0);
    } finally {
      debug.proc.kill('SIGTERM');
      await debug.exited;
      await storage.drop();
    }
  });

  it('no warning on loopback without BASE_URL (a developer machine)', () => {
    const warnings: string[] = [];
    const log = {
      debug() {},
      info() {},
      error() {},
      warn: (_o: object, m: string) => {
        warnings.push(m);
      },
    };
    return import('../../src/startup-settings.js').then(({ logStartupSettings }) => {
      logStartupSettings(loadConfig({ HOST: '127.0.0.1' }), log);
      logStartupSettings(loadConfig({ HOST: '::1' }), log);
      logStartupSettings(loadConfig({ HOST: '0.0.0.0', BASE_URL: 'https://ra.example.com' }), log);
      assert.deepEqual(warnings, []);
      logStartupSettings(loadConfig({ HOST: '::' }), log);
      assert.equal(warnings.length, 1);
    });
  });
});
