// Push subscriptions' rows, as both stores must answer them (npm test runs this on both): the cap per
// address holds, the same id again replaces url, secret, filter and expiry and keeps the delivery
// state; a lease is held by one owner until it runs out, then another takes it; the delivery state is
// written only by the lease's holder; paused and expired subscriptions are not leased; resume
// clears a pause; expired ones are deleted; rows go with their address; a refresh writes the
// replaced secret and its rotation time (migration 0020) and keeps the delivered epoch, which only
// markDeliveredEpoch writes; the holder's renewal is never skipped for a row lock of its own writes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DeliveryState, SubscriptionRecord } from '../../src/push/subscription-store.js';
import type { OpenedStore } from '../../src/storage/open-store.js';
import { useFreshStore } from './contract-store.js';
import { newAddress, RATE } from './store-records.js';

const sub = (addressId: string, id: string, over: Partial<SubscriptionRecord> = {}): SubscriptionRecord => ({
  addressId,
  id,
  url: `https://example.com/${id}`,
  secret: Buffer.from('sealed'),
  filter: '{"type":[],"match":[]}',
  createdAt: 1000,
  expiresAt: null,
  pausedAt: null,
  pausedReason: null,
  attempts: 0,
  nextAttemptAt: null,
  lastAttemptAt: null,
  lastStatus: null,
  lastError: null,
  lastSuccessAt: null,
  previousSecret: null,
  secretRotatedAt: null,
  deliveredEpoch: null,
  ...over,
});

const failed: DeliveryState = {
  attempts: 2,
  nextAttemptAt: 5000,
  pausedAt: null,
  pausedReason: null,
  lastAttemptAt: 4000,
  lastStatus: 500,
  lastError: 'answered 500',
  lastSuccessAt: null,
};

describe('push subscriptions: store contract', () => {
  let store: OpenedStore;
  useFreshStore((opened) => {
    store = opened;
  });

  async function address(): Promise<string> {
    const a = newAddress();
    await store.createAddress(a, { ...RATE, now: Date.now() });
    return a.id;
  }
  const mine = (rows: SubscriptionRecord[], addressId: string) => rows.filter((r) => r.addressId === addressId).map((r) => r.id);

  it('the cap holds under parallel saves; the same id replaces and keeps the delivery state; a missing address is address_gone', async () => {
    const a = await address();
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => store.subscriptions.saveSubscription(sub(a, `s${i}`), 3)));
    assert.equal(results.filter((r) => r === 'created').length, 3);
    assert.equal(results.filter((r) => r === 'too_many').length, 5);
    const [first] = await store.subscriptions.listSubscriptions(a);
    assert.ok(first);
    const leased = await store.subscriptions.leaseSubscriptions('me', 2000, 10_000, 1000);
    assert.ok(mine(leased, a).includes(first.id));
    assert.equal(await store.subscriptions.recordDelivery(a, first.id, 'me', failed), true);
    assert.equal(
      await store.subscriptions.saveSubscription(sub(a, first.id, { url: 'https://example.org/new', expiresAt: 99_999_999_999_999 }), 3),
      'replaced',
    );
    const got = await store.subscriptions.getSubscription(a, first.id);
    assert.equal(got?.url, 'https://example.org/new');
    assert.equal(got?.expiresAt, 99_999_999_999_999);
    assert.equal(got?.attempts, 2, 'delivery state kept on a refresh');
    assert.equal(got?.lastError, 'answered 500');
    assert.equal(await store.subscriptions.saveSubscription(sub('adr_missing', 'x'), 3), 'address_gone');
  });

  it('one owner holds a lease until it runs out; only the holder writes the delivery state; release frees it at once', async () => {
    const a = await address();
    await store.subscriptions.saveSubscription(sub(a, 'l1'), 10);
    const t = 10_000_000;
    assert.deepEqual(mine(await store.subscriptions.leaseSubscriptions('A', t, 1000, 1000), a), ['l1']);
    assert.deepEqual(mine(await store.subscriptions.leaseSubscriptions('B', t + 500, 1000, 1000), a), [], 'B cannot take a live lease');
    assert.equal(await store.subscriptions.recordDelivery(a, 'l1', 'B', failed), false, 'B may not write');
    assert.deepEqual(mine(await store.subscriptions.leaseSubscriptions('A', t + 900, 1000, 1000), a), ['l1'], 'A renews');
    assert.deepEqual(mine(await store.subscriptions.leaseSubscriptions('B', t + 1500, 1000, 1000), a), [], 'renewed: still A');
    assert.deepEqual(mine(await store.subscriptions.leaseSubscriptions('B', t + 2000, 1000, 1000), a), ['l1'], 'run out: B takes over');
    assert.equal(await store.subscriptions.recordDelivery(a, 'l1', 'A', failed), false, 'A lost it: its writes are refused');
    assert.equal(await store.subscriptions.recordDelivery(a, 'l1', 'B', failed), true);
    await store.subscriptions.releaseLeases('B');
    assert.deepEqual(mine(await store.subscriptions.leaseSubscriptions('C', t + 2001, 1000, 1000), a), ['l1'], 'released: C takes it at once');
  });

  it("the holder's renewal is never left out by its own delivery writes in flight at that moment", async () => {
    // On PostgreSQL a delivery write holds the row's lock for its UPDATE; a renewal that skipped
    // locked rows left the subscription out of the sweep, which stopped its runner mid-attempt and
    // sent the event twice (once in CI). On SQLite writes are serial, and the rule holds the same.
    const a = await address();
    await store.subscriptions.saveSubscription(sub(a, 'r1'), 10);
    const t = 40_000_000;
    assert.deepEqual(mine(await store.subscriptions.leaseSubscriptions('H', t, 60_000, 1000), a), ['r1']);
    for (let round = 0; round < 60; round++) {
      const [renewed, ...writes] = await Promise.all([
        store.subscriptions.leaseSubscriptions('H', t + round, 60_000, 1000),
        ...Array.from({ length: 4 }, () => store.subscriptions.recordDelivery(a, 'r1', 'H', failed)),
      ]);
      assert.deepEqual(mine(renewed as SubscriptionRecord[], a), ['r1'], `round ${round}: the renewal returned the held subscription`);
      assert.deepEqual(writes, [true, true, true, true], 'the holder may write');
    }
    assert.deepEqual(mine(await store.subscriptions.leaseSubscriptions('Other', t + 100, 60_000, 1000), a), [], 'still held');
  });

  it('parallel leasing by two owners never gives one subscription to both', async () => {
    const a = await address();
    for (let i = 0; i < 20; i++) await store.subscriptions.saveSubscription(sub(a, `p${i}`), 100);
    const now = 20_000_000;
    const [x, y] = await Promise.all([
      store.subscriptions.leaseSubscriptions('X', now, 5000, 1000),
      store.subscriptions.leaseSubscriptions('Y', now, 5000, 1000),
    ]);
    const both = mine(x, a).filter((id) => mine(y, a).includes(id));
    assert.deepEqual(both, []);
    assert.equal(mine(x, a).length + mine(y, a).length, 20, 'every one leased by one of them');
  });

  it('paused and expired ones are not leased; resume clears the pause; expired ones are deleted; rows go with the address', async () => {
    const a = await address();
    const now = 30_000_000;
    await store.subscriptions.saveSubscription(sub(a, 'live'), 10);
    await store.subscriptions.saveSubscription(sub(a, 'old', { expiresAt: now - 1 }), 10);
    await store.subscriptions.saveSubscription(sub(a, 'held'), 10);
    await store.subscriptions.leaseSubscriptions('P', now, 1, 1000);
    assert.equal(await store.subscriptions.recordDelivery(a, 'held', 'P', { ...failed, pausedAt: now, pausedReason: 'abort' }), true);
    const paused = await store.subscriptions.countPausedSubscriptions();
    assert.ok(paused >= 1);
    const leased = mine(await store.subscriptions.leaseSubscriptions('Q', now + 10, 1000, 1000), a).sort();
    assert.deepEqual(leased, ['live']);
    assert.equal(await store.subscriptions.resumeSubscription(a, 'held'), true);
    const resumed = await store.subscriptions.getSubscription(a, 'held');
    assert.equal(resumed?.pausedAt, null);
    assert.equal(resumed?.attempts, 0);
    assert.equal(resumed?.nextAttemptAt, null);
    assert.equal(await store.subscriptions.countPausedSubscriptions(), paused - 1);
    assert.ok((await store.subscriptions.deleteExpiredSubscriptions(now)) >= 1);
    assert.equal(await store.subscriptions.getSubscription(a, 'old'), null);
    assert.equal(await store.subscriptions.removeSubscription(a, 'live'), true);
    assert.equal(await store.subscriptions.removeSubscription(a, 'live'), false);
    assert.equal(await store.deleteAddress(a), true);
    assert.deepEqual(await store.subscriptions.listSubscriptions(a), [], 'gone with the address');
  });

  it('a refresh writes the previous secret and rotation time as given, and keeps the delivered epoch; markDeliveredEpoch writes only that', async () => {
    const a = await address();
    assert.equal(await store.subscriptions.saveSubscription(sub(a, 'r1', { deliveredEpoch: 'ep1' }), 10), 'created');
    const created = await store.subscriptions.getSubscription(a, 'r1');
    assert.equal(created?.deliveredEpoch, 'ep1');
    assert.equal(created?.previousSecret, null);
    assert.equal(created?.secretRotatedAt, null);
    const rotated = sub(a, 'r1', {
      secret: Buffer.from('sealed-new'),
      previousSecret: Buffer.from('sealed'),
      secretRotatedAt: 1_700_000_000_123,
      deliveredEpoch: null,
    });
    assert.equal(await store.subscriptions.saveSubscription(rotated, 10), 'replaced');
    const got = await store.subscriptions.getSubscription(a, 'r1');
    assert.deepEqual(got?.secret, Buffer.from('sealed-new'));
    assert.deepEqual(got?.previousSecret, Buffer.from('sealed'), 'the replaced secret, byte for byte');
    assert.equal(got?.secretRotatedAt, 1_700_000_000_123);
    assert.equal(got?.deliveredEpoch, 'ep1', 'a refresh does not write the delivered epoch');
    assert.equal(await store.subscriptions.markDeliveredEpoch(a, 'r1', 'ep2'), true);
    const marked = await store.subscriptions.getSubscription(a, 'r1');
    assert.equal(marked?.deliveredEpoch, 'ep2');
    assert.deepEqual(marked?.previousSecret, Buffer.from('sealed'), 'marking the epoch leaves the rotation');
    assert.equal(await store.subscriptions.markDeliveredEpoch(a, 'missing', 'ep2'), false);
    assert.equal(await store.subscriptions.saveSubscription(sub(a, 'r1'), 10), 'replaced');
    const cleared = await store.subscriptions.getSubscription(a, 'r1');
    assert.equal(cleared?.previousSecret, null, 'a refresh without a rotation clears it');
    assert.equal(cleared?.secretRotatedAt, null);
    assert.deepEqual((await store.subscriptions.listSubscriptions(a))[0]?.previousSecret, null);
  });
});
