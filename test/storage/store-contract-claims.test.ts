// Claims as both stores must answer them (design.md, "Claims"; SQLite in sqlite-claims.ts, PostgreSQL
// in one statement with SKIP LOCKED): no event leased twice under many parallel claimers, the oldest
// first, a lease that runs out makes the event claimable again (and dead after its last delivery),
// and a lease id is a fencing token for ack, extend and nack.
import assert from 'node:assert/strict';
import { type ClaimRequest, newLeaseNonce } from '../../src/claims/claim-rules.js';
import { newEventId } from '../../src/domain/credentials.js';
import { parseEventFilter } from '../../src/domain/event-filter.js';
import type { OpenedStore } from '../../src/storage/open-store.js';
import { onlyPostgres } from '../helpers.js';
import { type ContractStore, describeStoreContract, newEvent, ROOMY } from './contract-store.js';

const NO_FILTER = parseEventFilter({});
const T = 1_900_000_000_000;

function request(now: number, over: Partial<ClaimRequest> = {}): ClaimRequest {
  return { max: 1, leaseMs: 30_000, maxDeliveries: 5, filter: NO_FILTER, nonce: newLeaseNonce(), now, after: 0, ...over };
}

/** An address holding `n` events, sequences 1..n; their ids in order. */
async function queue(c: ContractStore, n: number, type = 't'): Promise<{ addressId: string; ids: string[] }> {
  const a = await c.address();
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await c.store.appendEvent(newEvent(a.id, { type }), ROOMY);
    assert.ok(r.kind === 'created');
    ids.push(r.event.id);
  }
  return { addressId: a.id, ids };
}

async function claimOne(store: OpenedStore, addressId: string, now: number, over: Partial<ClaimRequest> = {}) {
  const b = await store.claimEvents(addressId, request(now, over));
  assert.ok(b);
  return b;
}

describeStoreContract('Store contract: claims', [
  {
    name: '50 parallel claimers never lease one event twice; together they take every event once, oldest first',
    async run(c) {
      const { addressId, ids } = await queue(c, 120);
      const batches = await Promise.all(Array.from({ length: 50 }, (_, i) => c.store.claimEvents(addressId, request(T, { max: 1 + (i % 4) }))));
      const claimed = batches.flatMap((b) => b?.claims ?? []);
      const leased = claimed.map((x) => x.event.id);
      assert.equal(new Set(leased).size, leased.length, 'no event was leased by two claims');
      // 50 claims of 1-4 events ask for 125 in all: every one of the 120 is taken, and nothing more.
      assert.equal(leased.length, 120);
      for (const b of batches) {
        const seqs = (b?.claims ?? []).map((x) => x.event.sequence);
        assert.deepEqual(
          seqs,
          [...seqs].sort((x, y) => x - y),
          'a batch is in sequence order',
        );
      }
      for (const x of claimed) {
        assert.equal(x.event.deliveryCount, 1);
        assert.equal(x.leaseExpiresAt, T + 30_000);
        assert.match(x.leaseId, new RegExp(`^lease_${x.event.id.slice(4)}_`));
      }
      // Nothing is left to claim until the leases run out, and the store says when that is.
      const none = await claimOne(c.store, addressId, T + 1);
      assert.deepEqual(none.claims, []);
      assert.equal(none.nextChangeAt, T + 30_000);
      assert.deepEqual([...ids].sort(), [...leased].sort());
    },
  },
  {
    name: '50 parallel claimers racing for 10 events: exactly 10 leases, then after expiry exactly 10 again',
    async run(c) {
      const { addressId } = await queue(c, 10);
      const round = async (now: number) => {
        const batches = await Promise.all(Array.from({ length: 50 }, () => c.store.claimEvents(addressId, request(now, { max: 2, leaseMs: 5_000 }))));
        return batches.flatMap((b) => b?.claims ?? []);
      };
      const first = await round(T);
      assert.equal(first.length, 10);
      assert.equal(new Set(first.map((x) => x.event.id)).size, 10);
      const second = await round(T + 5_000);
      assert.equal(second.length, 10, 'a lease that ran out (at its end exactly) makes the event claimable again');
      assert.equal(new Set(second.map((x) => x.event.id)).size, 10);
      assert.ok(second.every((x) => x.event.deliveryCount === 2));
    },
  },
  {
    name: 'expiry: the old lease is fenced once the event is claimed again; a final lease running out makes the event dead',
    async run(c) {
      const { addressId, ids } = await queue(c, 1);
      const first = (await claimOne(c.store, addressId, T, { leaseMs: 5_000, maxDeliveries: 2 })).claims[0];
      assert.ok(first);
      assert.deepEqual((await claimOne(c.store, addressId, T + 4_999, { maxDeliveries: 2 })).claims, [], 'still leased a millisecond before its end');
      const second = (await claimOne(c.store, addressId, T + 5_000, { leaseMs: 5_000, maxDeliveries: 2 })).claims[0];
      assert.ok(second);
      assert.notEqual(second.leaseId, first.leaseId);
      const lost = await c.store.settleClaim(addressId, ids[0]!, first.leaseId, { kind: 'ack' }, T + 5_001);
      assert.equal(lost.outcome, 'lease_lost');
      assert.match(lost.outcome === 'lease_lost' ? lost.why : '', /claimed again/);
      // The second lease was the last delivery: once it runs out, the next claim makes the event dead.
      const after = await claimOne(c.store, addressId, T + 10_000, { maxDeliveries: 2 });
      assert.deepEqual(after.claims, []);
      assert.equal(after.died, 1);
      assert.equal(after.nextChangeAt, null);
      const page = await c.store.scanEvents(addressId, 0, parseEventFilter({ state: 'dead' }), 10, 1 << 30);
      assert.equal(page?.events.length, 1);
      assert.equal(page?.events[0]?.deadAt, T + 10_000);
      assert.equal(page?.events[0]?.deadReason, 'lease expired on delivery 2 of max_deliveries 2');
      const late = await c.store.settleClaim(addressId, ids[0]!, second.leaseId, { kind: 'ack' }, T + 10_001);
      assert.equal(late.outcome, 'lease_lost', 'a dead event is not acknowledged through its old lease');
    },
  },
  {
    name: 'settle: ack (repeatable), extend, nack with a delay, nack as dead; unknown events are not_found',
    async run(c) {
      const { addressId, ids } = await queue(c, 3);
      const [x, y, z] = (await claimOne(c.store, addressId, T, { max: 3 })).claims;
      assert.ok(x && y && z);
      // An expired lease not yet superseded may still ack; a second ack answers the same first time.
      const acked = await c.store.settleClaim(addressId, x.event.id, x.leaseId, { kind: 'ack' }, T + 40_000);
      assert.equal(acked.outcome === 'settled' && acked.event.acknowledgedAt, T + 40_000);
      const again = await c.store.settleClaim(addressId, x.event.id, x.leaseId, { kind: 'ack' }, T + 41_000);
      assert.equal(again.outcome === 'settled' && again.event.acknowledgedAt, T + 40_000);
      const extendAfterAck = await c.store.settleClaim(addressId, x.event.id, x.leaseId, { kind: 'extend', leaseMs: 1_000 }, T + 41_000);
      assert.equal(extendAfterAck.outcome, 'lease_lost');

      const extended = await c.store.settleClaim(addressId, y.event.id, y.leaseId, { kind: 'extend', leaseMs: 60_000 }, T + 1_000);
      assert.equal(extended.outcome === 'settled' && extended.leaseExpiresAt, T + 61_000);
      const nacked = await c.store.settleClaim(addressId, y.event.id, y.leaseId, { kind: 'nack', delayMs: 10_000, reason: 'busy', dead: false }, T + 2_000);
      assert.equal(nacked.outcome === 'settled' && nacked.leaseExpiresAt, null);
      assert.equal(nacked.outcome === 'settled' && nacked.event.deadAt, null);
      const twice = await c.store.settleClaim(addressId, y.event.id, y.leaseId, { kind: 'nack', delayMs: 0, reason: null, dead: false }, T + 2_001);
      assert.equal(twice.outcome, 'lease_lost', 'a nacked lease was given back');
      // Delayed: not claimable before its delay ends; the store names that moment.
      const early = await claimOne(c.store, addressId, T + 11_999);
      assert.deepEqual(early.claims, []);
      assert.equal(early.nextChangeAt, T + 12_000);
      const redelivered = (await claimOne(c.store, addressId, T + 12_000)).claims[0];
      assert.equal(redelivered?.event.id, y.event.id);
      assert.equal(redelivered?.event.deliveryCount, 2);

      const dead = await c.store.settleClaim(addressId, z.event.id, z.leaseId, { kind: 'nack', delayMs: 0, reason: 'poison', dead: true }, T + 3_000);
      assert.ok(dead.outcome === 'settled');
      assert.equal(dead.event.deadAt, T + 3_000);
      assert.equal(dead.event.deadReason, 'poison');

      const stranger = `lease_${newEventId().slice(4)}_${'a'.repeat(20)}`;
      assert.deepEqual(await c.store.settleClaim(addressId, `evt_${stranger.slice(6, 32)}`, stranger, { kind: 'ack' }, T), { outcome: 'not_found' });
      assert.equal(ids.length, 3);
    },
  },
  {
    name: 'a nack on the last delivery makes the event dead with the reason; acked and dead events are never claimed',
    async run(c) {
      const { addressId } = await queue(c, 2);
      const [x, y] = (await claimOne(c.store, addressId, T, { max: 2, maxDeliveries: 1 })).claims;
      assert.ok(x && y);
      const r = await c.store.settleClaim(addressId, x.event.id, x.leaseId, { kind: 'nack', delayMs: 0, reason: 'bad input', dead: false }, T + 1);
      assert.ok(r.outcome === 'settled');
      assert.equal(r.event.deadReason, 'nacked on delivery 1 of max_deliveries 1: bad input');
      await c.store.settleClaim(addressId, y.event.id, y.leaseId, { kind: 'ack' }, T + 1);
      const later = await claimOne(c.store, addressId, T + 3_600_000, { max: 10 });
      assert.deepEqual(later.claims, []);
      assert.equal(later.died, 0);
      assert.equal(later.nextChangeAt, null);
    },
  },
  {
    name: 'a filtered claim takes only matching events; an unknown address answers null',
    async run(c) {
      const a = await c.address();
      for (const type of ['a.one', 'b.one', 'a.two', 'b.two']) await c.store.appendEvent(newEvent(a.id, { type }), ROOMY);
      const b = await claimOne(c.store, a.id, T, { max: 10, filter: parseEventFilter({ type: 'b.*' }) });
      assert.deepEqual(
        b.claims.map((x) => x.event.type),
        ['b.one', 'b.two'],
      );
      assert.equal(b.window?.examinedTo, 4);
      assert.equal(await c.store.claimEvents('addr_unknown', request(T)), null);
    },
  },
  {
    name: 'two instances, 25 claimers each, racing for 30 events: every event leased once',
    skip: onlyPostgres && 'SQLite has one writing process by design; PostgreSQL instances claim from one database',
    async run(c) {
      const other = await c.openAnother();
      const { addressId } = await queue(c, 30);
      const batches = await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? c.store : other).claimEvents(addressId, request(T, { max: 2 }))));
      const leased = batches.flatMap((b) => b?.claims ?? []).map((x) => x.event.id);
      assert.equal(leased.length, 30);
      assert.equal(new Set(leased).size, 30);
    },
  },
]);
