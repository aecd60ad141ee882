// Controls for a public instance (design.md, "Operating a public instance"), all off by default: CREATE_TOKENS,
// MAX_TTL_SECONDS and DELIVERY_RATE_LIMIT over inbox, capture and SMTP together; on PostgreSQL the
// delivery limit is shared by two instances on one database.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { sendRaw, simpleMessage } from '../email/smtp-client.js';
import { api, createAddress, deliver, onlyPostgres, startTestService, type TestService } from '../helpers.js';

const TOKEN = 'ct_0123456789abcdefXYZ';

/** A child process (not spawnSync: the service answering it runs in this process's event loop). */
function run(
  cmd: string,
  args: string[],
  opts: { env: Record<string, string>; encoding: 'utf8' },
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    p.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    p.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

describe('controls', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({
      CREATE_TOKENS: `other-token-0123456789,${TOKEN}`,
      MAX_TTL_SECONDS: '3600',
      DELIVERY_RATE_LIMIT: '4',
      DELIVERY_RATE_WINDOW_SECONDS: '3600',
    });
  });
  after(() => svc.stop());

  it('CREATE_TOKENS: create needs one of the tokens (401 otherwise, with its challenge)', async () => {
    const none = await api(svc.baseUrl, 'POST', '/api/v1/addresses', { json: {} });
    assert.equal(none.status, 401);
    assert.equal(none.json.error.code, 'unauthorized');
    assert.match(none.json.error.message, /CREATE_TOKENS/);
    assert.equal(none.headers.get('www-authenticate'), 'Bearer realm="return-address"');
    const wrong = await api(svc.baseUrl, 'POST', '/api/v1/addresses', { json: {}, token: `${TOKEN}x` });
    assert.equal(wrong.status, 401);
    const prefix = await api(svc.baseUrl, 'POST', '/api/v1/addresses', { json: {}, token: TOKEN.slice(0, -1) });
    assert.equal(prefix.status, 401);
    const ok = await api(svc.baseUrl, 'POST', '/api/v1/addresses', { json: {}, token: TOKEN });
    assert.equal(ok.status, 201, ok.text);
    // The document says so, and only when configured.
    const doc = (await api(svc.baseUrl, 'GET', '/openapi.json')).json;
    const op = doc.paths['/api/v1/addresses'].post;
    assert.ok(op.responses['401']);
    assert.deepEqual(op.security, [{ createToken: [] }]);
    assert.equal(doc.components.securitySchemes.createToken.scheme, 'bearer');
  });

  it('the CLI and the Python client send a create token from $RETURN_ADDRESS_CREATE_TOKEN', async () => {
    const env = { PATH: process.env.PATH ?? '', RETURN_ADDRESS_URL: svc.baseUrl };
    const without = await run(process.execPath, ['bin/return-address.js', 'create'], { env, encoding: 'utf8' });
    assert.equal(without.status, 1);
    assert.match(without.stderr, /unauthorized \(HTTP 401\).*CREATE_TOKENS/);
    const withToken = await run(process.execPath, ['bin/return-address.js', 'create'], {
      env: { ...env, RETURN_ADDRESS_CREATE_TOKEN: TOKEN },
      encoding: 'utf8',
    });
    assert.equal(withToken.status, 0, withToken.stderr);
    assert.match(JSON.parse(withToken.stdout).address.id, /^addr_/);
    const py = await run(
      'python3',
      ['-c', 'import sys, return_address as r; print(r.ReturnAddress.create(url=sys.argv[1], create_token=sys.argv[2]).id)', svc.baseUrl, TOKEN],
      { env: { ...env, PYTHONPATH: 'clients/python' }, encoding: 'utf8' },
    );
    assert.equal(py.status, 0, py.stderr);
    assert.match(py.stdout, /^addr_/);
  });

  it('MAX_TTL_SECONDS: a longer expires_in_seconds is 400 naming the cap; the default follows the cap', async () => {
    const r = await api(svc.baseUrl, 'POST', '/api/v1/addresses', { json: { expires_in_seconds: 3601 }, token: TOKEN });
    assert.equal(r.status, 400);
    assert.equal(r.json.error.code, 'invalid_request');
    assert.match(r.json.error.message, /expires_in_seconds must be at most 3600.*MAX_TTL_SECONDS/);
    const atCap = await api(svc.baseUrl, 'POST', '/api/v1/addresses', { json: { expires_in_seconds: 3600 }, token: TOKEN });
    assert.equal(atCap.status, 201);
    const dflt = await api(svc.baseUrl, 'POST', '/api/v1/addresses', { json: {}, token: TOKEN });
    const ttl = Date.parse(dflt.json.address.expiresAt) - Date.parse(dflt.json.address.createdAt);
    assert.equal(ttl, 3600 * 1000);
  });

  it('DELIVERY_RATE_LIMIT counts inbox, capture and mail together: 429 with Retry-After, SMTP 451', async () => {
    const create = await api(svc.baseUrl, 'POST', '/api/v1/addresses', { json: {}, token: TOKEN });
    const hook = create.json.endpoints.hook_url as string;
    const inbox = create.json.endpoints.inbox_url as string;
    const email = create.json.address.email as string;
    assert.equal((await api(svc.baseUrl, 'POST', inbox, { json: { data: 1 } })).status, 202);
    assert.ok((await api(svc.baseUrl, 'POST', hook, { json: { n: 2 } })).status < 300);
    assert.equal(
      (await sendRaw(svc.smtpPort, { from: 'a@example.com', rcpts: [email], message: simpleMessage({ to: email, messageId: 'r1@example.com' }) })).final?.code,
      250,
    );
    assert.equal((await api(svc.baseUrl, 'POST', inbox, { json: { data: 4 } })).status, 202);
    // The fifth, by any way in, is refused.
    const refused = await api(svc.baseUrl, 'POST', inbox, { json: { data: 5 } });
    assert.equal(refused.status, 429);
    assert.equal(refused.json.error.code, 'rate_limited');
    assert.match(refused.json.error.message, /DELIVERY_RATE_LIMIT/);
    const retry = Number(refused.headers.get('retry-after'));
    assert.ok(retry >= 1 && retry <= 3600, `Retry-After ${retry}`);
    assert.equal((await api(svc.baseUrl, 'POST', hook, { json: { n: 6 } })).status, 429);
    const mail = await sendRaw(svc.smtpPort, { from: 'a@example.com', rcpts: [email], message: simpleMessage({ to: email, messageId: 'r2@example.com' }) });
    assert.equal(mail.final?.code, 451);
    assert.match(mail.final?.text ?? '', /try again in \d+ seconds/);
    // Another address is not affected (per address), and refused attempts did not count.
    const other = await api(svc.baseUrl, 'POST', '/api/v1/addresses', { json: {}, token: TOKEN });
    assert.equal((await api(svc.baseUrl, 'POST', other.json.endpoints.inbox_url, { json: {} })).status, 202);
    const page = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${create.json.address.id}/events`, { token: create.json.credentials.read_token });
    assert.equal(page.json.events.length, 4);
  });

  it('many parallel deliveries: exactly the limit is stored', async () => {
    const create = await api(svc.baseUrl, 'POST', '/api/v1/addresses', { json: {}, token: TOKEN });
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => api(svc.baseUrl, 'POST', create.json.endpoints.inbox_url, { json: { data: i } })));
    assert.equal(results.filter((r) => r.status === 202).length, 4);
    assert.equal(results.filter((r) => r.status === 429).length, 36);
  });

  it('invalid settings stop the process naming the variable', () => {
    const bad: [Record<string, string>, string][] = [
      [{ CREATE_TOKENS: 'short' }, 'CREATE_TOKENS'],
      [{ CREATE_TOKENS: 'a-good-long-token-123,has space in it!!' }, 'CREATE_TOKENS'],
      [{ MAX_TTL_SECONDS: '0' }, 'MAX_TTL_SECONDS'],
      [{ MAX_TTL_SECONDS: '60', DEFAULT_TTL_SECONDS: '120' }, 'DEFAULT_TTL_SECONDS'],
      [{ DELIVERY_RATE_LIMIT: 'ten' }, 'DELIVERY_RATE_LIMIT'],
      [{ DELIVERY_RATE_WINDOW_SECONDS: '0' }, 'DELIVERY_RATE_WINDOW_SECONDS'],
      [{ RETAIN_ACKED_SECONDS: '-5' }, 'RETAIN_ACKED_SECONDS'],
      [{ METRICS_PORT: '70000' }, 'METRICS_PORT'],
      [{ METRICS_PORT: '3000', PORT: '3000' }, 'METRICS_PORT'],
    ];
    for (const [env, variable] of bad) {
      assert.throws(
        () => loadConfig(env),
        (err: unknown) => err instanceof ConfigError && err.variable === variable,
        JSON.stringify(env),
      );
    }
    const dflt = loadConfig({});
    assert.deepEqual(
      [dflt.createTokens, dflt.maxTtlSeconds, dflt.deliveryRateLimit, dflt.retainAckedSeconds, dflt.metricsPort],
      [[], undefined, undefined, undefined, undefined],
    );
  });
});

describe('DELIVERY_RATE_LIMIT across two instances on one PostgreSQL', { skip: onlyPostgres }, () => {
  let one: TestService;
  let two: TestService;
  const env = { DELIVERY_RATE_LIMIT: '10', DELIVERY_RATE_WINDOW_SECONDS: '3600' };
  before(async () => {
    one = await startTestService(env);
    two = await startTestService(env, one.storage);
  });
  after(async () => {
    await two.stop({ keepStorage: true });
    await one.stop();
  });

  it('shares one count: 10 stored of 30 sent to both at once', async () => {
    const a = await createAddress(one.baseUrl);
    const viaTwo = { ...a, inboxUrl: a.inboxUrl.replace(one.baseUrl, two.baseUrl) };
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => deliver(i % 2 ? one.baseUrl : two.baseUrl, i % 2 ? a : viaTwo, { data: i })));
    assert.equal(results.filter((r) => r.status === 202).length, 10);
    assert.equal(results.filter((r) => r.status === 429).length, 20);
  });
});
