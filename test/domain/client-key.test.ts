// Per-client limits key IPv6 on a prefix (IPV6_PREFIX_BITS), since one host owns a whole prefix: the owner of a /64 is one client.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { clientKey } from '../../src/domain/client-key.js';
import { SmtpConnectionLimits } from '../../src/email/smtp-connection-limits.js';
import { api } from '../helpers.js';
import { type InjectedService, startInjectedService } from '../inject.js';

describe('clientKey', () => {
  it('IPv4 and IPv4-mapped IPv6 are the address; IPv6 is its prefix, however the address is written', () => {
    assert.equal(clientKey('203.0.113.7'), '203.0.113.7');
    assert.equal(clientKey('::ffff:203.0.113.7'), '203.0.113.7');
    const key = '2001:db8:1:2:0:0:0:0/64';
    for (const ip of ['2001:db8:1:2::1', '2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:0db8:0001:0002:0:0:0:9', '2001:db8:1:2::1.2.3.4', '2001:DB8:1:2::a%eth0']) {
      assert.equal(clientKey(ip, 64), key, ip);
    }
    assert.notEqual(clientKey('2001:db8:1:3::1', 64), key);
    assert.equal(clientKey('2001:db8:1:2:3:4:5:6', 48), '2001:db8:1:0:0:0:0:0/48');
    assert.equal(clientKey('2001:db8:1:2:3:4:5:6', 56), '2001:db8:1:0:0:0:0:0/56');
    assert.equal(clientKey('2001:db8:1:2ff:3:4:5:6', 56), '2001:db8:1:200:0:0:0:0/56');
    assert.equal(clientKey('2001:db8:1:2:3:4:5:6', 128), '2001:db8:1:2:3:4:5:6');
    assert.equal(clientKey('not an ip'), 'not an ip');
  });

  it('the SMTP per-client connection cap counts a /64 as one client', () => {
    const limits = new SmtpConnectionLimits(2, (ip) => clientKey(ip, 64));
    assert.equal(limits.admit('s1', '2001:db8:1:2::1').admitted, true);
    assert.equal(limits.admit('s2', '2001:db8:1:2::2').admitted, true);
    assert.equal(limits.admit('s3', '2001:db8:1:2::3').admitted, false, 'a third address of the same /64');
    assert.equal(limits.admit('s4', '2001:db8:1:3::1').admitted, true, 'another /64');
    limits.release('s1');
    limits.release('s3'); // refused: never counted
    assert.equal(limits.admit('s5', '2001:db8:1:2::4').admitted, true);
  });
});

describe('create rate limit keyed on the IPv6 prefix', () => {
  let svc: InjectedService;
  before(async () => {
    // One trusted hop, so X-Forwarded-For names the client as a proxy in front would.
    svc = await startInjectedService({ CREATE_RATE_LIMIT: '3', TRUST_PROXY: '1' });
  });
  after(async () => {
    await svc.stop();
  });

  it('addresses of one /64 share one budget; another /64 has its own', async () => {
    const create = (ip: string) => api(svc.baseUrl, 'POST', '/api/v1/addresses', { json: {}, headers: { 'x-forwarded-for': ip } });
    for (const ip of ['2001:db8:1:2::1', '2001:db8:1:2::2', '2001:db8:1:2:aaaa::3']) assert.equal((await create(ip)).status, 201, ip);
    const fourth = await create('2001:db8:1:2:ffff:ffff:ffff:ffff');
    assert.equal(fourth.status, 429, 'a fourth address in the same /64 is the same client');
    assert.equal(fourth.json.error.code, 'rate_limited');
    assert.equal((await create('2001:db8:1:3::1')).status, 201, 'another /64 is another client');
  });
});
