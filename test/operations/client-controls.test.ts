// BLOCK_CIDRS and DELIVERY_RATE_LIMIT_PER_IP on a real service: creates and deliveries from a listed
// IP or prefix (IPv4, IPv6, IPv4-mapped) are 403 blocked, SMTP 550 at connect; deliveries per client
// key across addresses are limited (429 with Retry-After, SMTP 451), exactly under parallel load,
// shared by two instances on one database, and counted in the metrics. A bad setting stops the boot.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { RawSmtp, sendRaw, simpleMessage } from '../email/smtp-client.js';
import { api, type Res, STORE, startTestService, type TestService } from '../helpers.js';
import { sample } from './helpers.js';

interface Made {
  id: string;
  token: string;
  inboxUrl: string;
  hookUrl: string;
  email: string;
}

async function createFrom(svc: TestService, ip: string): Promise<Made> {
  const r = await api(svc.baseUrl, 'POST', '/api/v1/addresses', { json: {}, headers: { 'x-forwarded-for': ip } });
  assert.equal(r.status, 201, r.text);
  return {
    id: r.json.address.id,
    token: r.json.credentials.read_token,
    inboxUrl: r.json.endpoints.inbox_url,
    hookUrl: r.json.endpoints.hook_url,
    email: r.json.address.email,
  };
}

const deliverFrom = (svc: TestService, a: Made, ip: string, data: unknown = 1): Promise<Res> =>
  api(svc.baseUrl, 'POST', a.inboxUrl, { json: { data }, headers: { 'x-forwarded-for': ip } });

function assertError(r: Res, status: number, code: string, mentions: RegExp) {
  assert.equal(r.status, status, r.text);
  assert.equal(r.json.error.code, code);
  assert.match(r.json.error.message, mentions);
}

describe('settings are checked at boot', () => {
  it('a bad BLOCK_CIDRS or DELIVERY_RATE_LIMIT_PER_IP names the variable', () => {
    for (const [name, value] of [
      ['BLOCK_CIDRS', '10.0.0.0/8, not-an-ip'],
      ['BLOCK_CIDRS', '10.0.0.0/33'],
      ['BLOCK_CIDRS', '2001:db8::/129'],
      ['DELIVERY_RATE_LIMIT_PER_IP', '0'],
      ['DELIVERY_RATE_LIMIT_PER_IP', 'many'],
      ['DELIVERY_RATE_PER_IP_WINDOW_SECONDS', '0'],
    ] as const) {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (err: unknown) => err instanceof ConfigError && err.message.includes(name),
        `${name}=${value}`,
      );
    }
    const ok = loadConfig({ BLOCK_CIDRS: '192.0.2.1, 198.51.100.0/24 2001:db8::/32,::ffff:203.0.113.0/120', DELIVERY_RATE_LIMIT_PER_IP: '10' });
    assert.equal(ok.blockCidrs.length, 4);
    assert.equal(ok.deliveryRateLimitPerIp, 10);
    assert.equal(ok.deliveryRatePerIpWindowSeconds, 60);
    assert.deepEqual(loadConfig({}).blockCidrs, []);
  });
});

describe('BLOCK_CIDRS', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({
      TRUST_PROXY: '1',
      METRICS_PORT: '0',
      // 127.0.0.1 is the SMTP test client's peer; HTTP requests below always name their IP in X-Forwarded-For.
      BLOCK_CIDRS: '198.51.100.0/24, 2001:db8:bad::/48, 127.0.0.1, 203.0.113.77',
    });
  });
  after(() => svc.stop());

  it('refuses creates and deliveries from listed IPs and prefixes with 403 blocked; others pass', async () => {
    for (const ip of ['198.51.100.7', '198.51.100.255', '2001:db8:bad:1::9', '::ffff:198.51.100.8', '203.0.113.77']) {
      assertError(await api(svc.baseUrl, 'POST', '/api/v1/addresses', { json: {}, headers: { 'x-forwarded-for': ip } }), 403, 'blocked', /BLOCK_CIDRS/);
    }
    const a = await createFrom(svc, '203.0.113.78');
    await createFrom(svc, '2001:db8:bae::1');
    // Deliveries: the inbox and the capture URL, whatever the secret (blocked comes first, so nothing about the address is told).
    assertError(await deliverFrom(svc, a, '198.51.100.7'), 403, 'blocked', /BLOCK_CIDRS/);
    assertError(
      await api(svc.baseUrl, 'POST', `/api/v1/inbox/${a.id}/wrong`, { json: {}, headers: { 'x-forwarded-for': '198.51.100.7' } }),
      403,
      'blocked',
      /blocked/,
    );
    assertError(await api(svc.baseUrl, 'POST', a.hookUrl, { json: { x: 1 }, headers: { 'x-forwarded-for': '2001:db8:bad::1' } }), 403, 'blocked', /blocked/);
    // Reading is not a create or a delivery: the address's owner still reads from anywhere.
    assert.equal(
      (await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events`, { token: a.token, headers: { 'x-forwarded-for': '198.51.100.7' } })).status,
      200,
    );
    assert.equal((await deliverFrom(svc, a, '203.0.113.78')).status, 202);
    assert.ok((await api(svc.baseUrl, 'POST', a.hookUrl, { json: { x: 1 }, headers: { 'x-forwarded-for': '192.0.2.1' } })).status < 300);

    // SMTP: the listed peer is refused at connect with 550.
    const s = await RawSmtp.open(svc.smtpPort);
    const greeting = await s.reply();
    assert.equal(greeting.code, 550, greeting.text);
    await s.quit().catch(() => {});

    const text = await (await fetch(svc.running.metrics!.url)).text();
    assert.equal(sample(text, 'return_address_deliveries_refused_total', { way_in: 'inbox', reason: 'blocked' }), 2);
    assert.equal(sample(text, 'return_address_deliveries_refused_total', { way_in: 'capture', reason: 'blocked' }), 1);
    assert.equal(sample(text, 'return_address_deliveries_refused_total', { way_in: 'email', reason: 'blocked' }), 1);
    for (const ip of ['198.51.100', '203.0.113', '2001:db8']) assert.ok(!text.includes(ip), `${ip} must not appear in /metrics`);
  });

  it('a flood from a blocked prefix is refused while others are answered', async () => {
    const a = await createFrom(svc, '192.0.2.10');
    const flood = await Promise.all(Array.from({ length: 200 }, (_, i) => deliverFrom(svc, a, `198.51.100.${i % 250}`, i)));
    assert.deepEqual([...new Set(flood.map((r) => r.status))], [403]);
    const beside = await Promise.all(Array.from({ length: 20 }, (_, i) => deliverFrom(svc, a, '192.0.2.10', i)));
    assert.deepEqual([...new Set(beside.map((r) => r.status))], [202]);
  });
});

describe('DELIVERY_RATE_LIMIT_PER_IP', () => {
  let svc: TestService;
  let second: TestService | undefined;
  before(async () => {
    svc = await startTestService({ TRUST_PROXY: '1', METRICS_PORT: '0', DELIVERY_RATE_LIMIT_PER_IP: '5', DELIVERY_RATE_PER_IP_WINDOW_SECONDS: '3600' });
  });
  after(async () => {
    await second?.stop();
    await svc.stop();
  });

  it('limits deliveries per client across addresses and ways in, with Retry-After; other clients are unaffected', async () => {
    const addrs = await Promise.all([1, 2, 3].map(() => createFrom(svc, '192.0.2.1')));
    const ip = '198.51.100.20';
    // A wrong secret spends nothing: the credential is checked first.
    assert.equal((await api(svc.baseUrl, 'POST', `/api/v1/inbox/${addrs[0]!.id}/wrong`, { json: {}, headers: { 'x-forwarded-for': ip } })).status, 404);
    for (let i = 0; i < 4; i++) assert.equal((await deliverFrom(svc, addrs[i % 3]!, ip, i)).status, 202);
    assert.ok((await api(svc.baseUrl, 'POST', addrs[2]!.hookUrl, { json: { x: 1 }, headers: { 'x-forwarded-for': ip } })).status < 300);
    const over = await deliverFrom(svc, addrs[1]!, ip);
    assertError(over, 429, 'rate_limited', /DELIVERY_RATE_LIMIT_PER_IP/);
    const retry = Number(over.headers.get('retry-after'));
    assert.ok(retry >= 1 && retry <= 3600, `Retry-After ${retry}`);
    assertError(
      await api(svc.baseUrl, 'POST', addrs[0]!.hookUrl, { json: { x: 1 }, headers: { 'x-forwarded-for': ip } }),
      429,
      'rate_limited',
      /across all addresses/,
    );
    // Another client, and reads by anyone, are not limited.
    assert.equal((await deliverFrom(svc, addrs[1]!, '198.51.100.21')).status, 202);
    assert.equal(
      (await api(svc.baseUrl, 'GET', `/api/v1/addresses/${addrs[1]!.id}/events`, { token: addrs[1]!.token, headers: { 'x-forwarded-for': ip } })).status,
      200,
    );
    // An IPv6 client is its /64: two addresses in one prefix share one budget.
    for (let i = 0; i < 5; i++) assert.equal((await deliverFrom(svc, addrs[0]!, `2001:db8:5:6::${i + 1}`, i)).status, 202);
    assertError(await deliverFrom(svc, addrs[0]!, '2001:db8:5:6::ffff'), 429, 'rate_limited', /per 3600 s/);
    assert.equal((await deliverFrom(svc, addrs[0]!, '2001:db8:5:7::1')).status, 202);
  });

  it('admits exactly the limit from many parallel deliveries, and SMTP answers 451 past it', async () => {
    const addrs = await Promise.all([1, 2, 3, 4].map(() => createFrom(svc, '192.0.2.2')));
    const ip = '198.51.100.30';
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => deliverFrom(svc, addrs[i % 4]!, ip, i)));
    const statuses = results.map((r) => r.status).sort();
    assert.deepEqual(statuses, [...Array(5).fill(202), ...Array(35).fill(429)]);
    // Liveness beside it: another client's delivery is answered at once.
    assert.equal((await deliverFrom(svc, addrs[0]!, '198.51.100.31')).status, 202);
    // Every 2xx is a stored event: 5 over the four queues.
    let stored = 0;
    for (const a of addrs) stored += (await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events`, { token: a.token })).json.events.length;
    assert.equal(stored, 6);

    // SMTP from 127.0.0.1: each accepted recipient is one delivery; the sixth is 451 at RCPT TO.
    for (let i = 0; i < 5; i++) {
      const r = await sendRaw(svc.smtpPort, {
        from: 'x@example.com',
        rcpts: [addrs[0]!.email],
        message: simpleMessage({ to: addrs[0]!.email, messageId: `m${i}@example.com` }),
      });
      assert.equal(r.final?.code, 250, r.rcpt[0]?.text);
    }
    const limited = await sendRaw(svc.smtpPort, { from: 'x@example.com', rcpts: [addrs[1]!.email], message: 'x' });
    assert.equal(limited.rcpt[0]?.code, 451, limited.rcpt[0]?.text);
    assert.match(limited.rcpt[0]?.text ?? '', /DELIVERY_RATE_LIMIT_PER_IP/);

    const text = await (await fetch(svc.running.metrics!.url)).text();
    assert.ok((sample(text, 'return_address_deliveries_refused_total', { way_in: 'inbox', reason: 'rate_limited' }) ?? 0) >= 35);
    assert.equal(sample(text, 'return_address_deliveries_refused_total', { way_in: 'email', reason: 'rate_limited' }), 1);
  });

  it('two instances on one database share one budget per client', {
    skip: STORE === 'postgres' ? false : 'two instances share a database on PostgreSQL',
  }, async () => {
    second = await startTestService({ TRUST_PROXY: '1', DELIVERY_RATE_LIMIT_PER_IP: '5', DELIVERY_RATE_PER_IP_WINDOW_SECONDS: '3600' }, svc.storage);
    const a = await createFrom(svc, '192.0.2.3');
    const ip = '198.51.100.40';
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        api(i % 2 === 0 ? svc.baseUrl : second!.baseUrl, 'POST', a.inboxUrl.replace(svc.baseUrl, ''), {
          json: { data: i },
          headers: { 'x-forwarded-for': ip },
        }),
      ),
    );
    assert.deepEqual(results.map((r) => r.status).sort(), [...Array(5).fill(202), ...Array(15).fill(429)]);
  });
});
