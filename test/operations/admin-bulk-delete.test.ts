// `return-address admin delete --ip / --created-before` as an operator runs it: the bin shim spawned
// beside a live service on the same store; a dry run counts, --yes deletes in batches, and the
// running service refuses the deleted addresses at once while deliveries to others go on.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { api, startTestService, type TestService } from '../helpers.js';
import { cli } from './admin-cli.js';

describe('return-address admin delete --ip / --created-before', () => {
  let svc: TestService;
  before(async () => {
    // One proxy hop trusted, so X-Forwarded-For sets each create's client IP.
    svc = await startTestService({ TRUST_PROXY: '1', CREATE_RATE_LIMIT: '100000' });
  });
  after(() => svc.stop());

  const createFrom = async (ip: string) => {
    const r = await api(svc.baseUrl, 'POST', '/api/v1/addresses', { json: {}, headers: { 'x-forwarded-for': ip } });
    assert.equal(r.status, 201, r.text);
    return { id: r.json.address.id as string, token: r.json.credentials.read_token as string, inboxUrl: r.json.endpoints.inbox_url as string };
  };

  it('prints the count without --yes, deletes with it, and the running service refuses them at once', async () => {
    const abusive = await Promise.all(Array.from({ length: 7 }, () => createFrom('203.0.113.9')));
    const v6 = await Promise.all([createFrom('2001:db8:1:2::5'), createFrom('2001:db8:1:2::6')]);
    const keep = await Promise.all([createFrom('198.51.100.1'), createFrom('2001:db8:1:3::1')]);
    const env = svc.storage.env;
    for (const a of [...abusive, ...keep]) assert.equal((await api(svc.baseUrl, 'POST', a.inboxUrl, { json: { data: 1 } })).status, 202);

    const dry = await cli(['admin', 'delete', '--ip', '203.0.113.9'], env);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, /^7 address\(es\) created from 203\.0\.113\.9 would be deleted .*--yes/);
    assert.equal((await api(svc.baseUrl, 'GET', `/api/v1/addresses/${abusive[0]!.id}`, { token: abusive[0]!.token })).status, 200, 'a dry run deletes nothing');

    const done = await cli(['admin', 'delete', '--ip', '203.0.113.9', '--yes', '--json'], env);
    assert.equal(done.code, 0, done.stderr);
    assert.deepEqual(done.json, { deleted: 7 });
    for (const a of abusive) {
      assert.equal((await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}`, { token: a.token })).status, 404);
      assert.equal((await api(svc.baseUrl, 'POST', a.inboxUrl, { json: { data: 'late' } })).status, 404);
    }
    // An IPv6 client is matched by its prefix (IPV6_PREFIX_BITS, 64): another address in the same /64 matches too.
    const six = await cli(['admin', 'delete', '--ip', '2001:db8:1:2::ffff', '--yes', '--json'], env);
    assert.equal(six.code, 0, six.stderr);
    assert.deepEqual(six.json, { deleted: 2 });
    for (const a of v6) assert.equal((await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}`, { token: a.token })).status, 404);
    for (const a of keep) assert.equal((await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}`, { token: a.token })).status, 200);

    // --created-before: everything older than a moment after the kept ones, combined with --ip (both must hold).
    const cut = new Date(Date.now() + 1000).toISOString();
    const later = await createFromLater(createFrom, 1100);
    const both = await cli(['admin', 'delete', '--ip', '198.51.100.1', '--created-before', cut, '--json'], env);
    assert.deepEqual(both.json, { would_delete: 1, dry_run: true });
    const old = await cli(['admin', 'delete', '--created-before', cut, '--yes'], env);
    assert.equal(old.code, 0, old.stderr);
    assert.match(old.stdout, /^deleted 2 address\(es\) created before /);
    for (const a of keep) assert.equal((await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}`, { token: a.token })).status, 404);
    assert.equal((await api(svc.baseUrl, 'GET', `/api/v1/addresses/${later.id}`, { token: later.token })).status, 200);

    const bad = await cli(['admin', 'delete', '--created-before', 'yesterday'], env);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /--created-before takes an ISO 8601 time/);
    const mixed = await cli(['admin', 'delete', later.id, '--ip', '198.51.100.1'], env);
    assert.equal(mixed.code, 1);
    assert.match(mixed.stderr, /not both/);
  });

  it('deletes more addresses than one batch while deliveries to others go on', async () => {
    const env = svc.storage.env;
    const survivor = await createFrom('192.0.2.200');
    const many = 250;
    for (let i = 0; i < many; i += 100) await Promise.all(Array.from({ length: Math.min(100, many - i) }, () => createFrom('192.0.2.77')));
    let writing = true;
    const writer = (async () => {
      let n = 0;
      while (writing) {
        assert.equal((await api(svc.baseUrl, 'POST', survivor.inboxUrl, { json: { data: n } })).status, 202);
        n++;
      }
      return n;
    })();
    const r = await cli(['admin', 'delete', '--ip', '192.0.2.77', '--yes', '--json'], env);
    writing = false;
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.json, { deleted: many });
    assert.ok((await writer) >= 1, 'deliveries went on beside the bulk delete');
    assert.deepEqual((await cli(['admin', 'delete', '--ip', '192.0.2.77', '--json'], env)).json, { would_delete: 0, dry_run: true });
  });
});

/** Waits until `ms` have passed, then creates one address (a creation time after a cut-off). */
async function createFromLater<T>(createFrom: (ip: string) => Promise<T>, ms: number): Promise<T> {
  await new Promise((r) => setTimeout(r, ms));
  return createFrom('198.51.100.50');
}
