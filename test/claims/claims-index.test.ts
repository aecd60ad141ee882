// SQLite indexes open events for claims only on addresses that have been claimed from (migration
// 0011): a delivery to any other address adds no entry to events_open, the first claim indexes
// what is already open, and from then on every new event is indexed as it is inserted. Claims see
// exactly the open events either way, oldest first.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { SQLITE_FILE } from '../../src/storage/open-store.js';
import { type Addr, api, createAddress, deliver, onlySqlite } from '../helpers.js';
import { type InjectedService, startInjectedService } from '../inject.js';

describe('the claims index on SQLite (built on the first claim)', { skip: onlySqlite }, () => {
  let svc: InjectedService;
  let db: Database.Database;
  before(async () => {
    svc = await startInjectedService();
    db = new Database(join(svc.storage.dataDir, SQLITE_FILE), { readonly: true });
  });
  after(async () => {
    db.close();
    await svc.stop();
  });
  const indexed = (a: Addr) =>
    db
      .prepare<[string], number>('SELECT count(*) FROM events WHERE address_id = ? AND claim_indexed = 1 AND acknowledged_at IS NULL AND dead_at IS NULL')
      .pluck()
      .get(a.id);
  const claim = (a: Addr, max: number) => api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/claims`, { token: a.token, json: { max } });
  const ack = (a: Addr, leaseId: string) => api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/claims/${leaseId}/ack`, { token: a.token });

  it('leaves events_open empty for an address nobody claims from, then claims every open event in order', async () => {
    const a = await createAddress(svc.baseUrl);
    const untouched = await createAddress(svc.baseUrl);
    for (let i = 1; i <= 5; i++) assert.equal((await deliver(svc.baseUrl, a, { data: i })).status, 202);
    for (let i = 1; i <= 3; i++) assert.equal((await deliver(svc.baseUrl, untouched, { data: i })).status, 202);
    assert.equal(indexed(a), 0, 'nothing indexed before the first claim');
    assert.equal(indexed(untouched), 0);
    // An event acknowledged through the plain ack before any claim is not open: never claimed.
    const first = (await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events`, { token: a.token })).json.events[0];
    assert.equal((await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/events/${first.id}/ack`, { token: a.token })).status, 200);

    const c1 = await claim(a, 2);
    assert.equal(c1.status, 200, c1.text);
    assert.deepEqual(
      c1.json.claims.map((c: { event: { sequence: number } }) => c.event.sequence),
      [2, 3],
    );
    assert.equal(indexed(a), 4, 'the first claim indexed the four open events');
    // Events delivered after the first claim are indexed as they are inserted.
    for (let i = 6; i <= 7; i++) assert.equal((await deliver(svc.baseUrl, a, { data: i })).status, 202);
    assert.equal(indexed(a), 6);
    assert.equal(indexed(untouched), 0, 'another address is not indexed by this one being claimed from');
    const c2 = await claim(a, 10);
    assert.deepEqual(
      c2.json.claims.map((c: { event: { sequence: number } }) => c.event.sequence),
      [4, 5, 6, 7],
    );
    for (const c of [...c1.json.claims, ...c2.json.claims]) assert.equal((await ack(a, c.lease_id)).status, 200);
    assert.equal(indexed(a), 0, 'acknowledged events leave the index');
    assert.deepEqual((await claim(a, 10)).json.claims, []);
  });
});
