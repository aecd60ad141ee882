// The quarantine rule and the sender policy's rows, as both stores must answer them (npm test runs
// this on both): an event appended quarantined is stored with its mark in the same transaction, the
// default state leaves it out while state=quarantined and state=all keep it, a claim never takes it,
// a release sets released_at once and makes it an ordinary event, and a policy is one row per
// address that goes with the address.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newEventId } from '../../src/domain/credentials.js';
import { parseEventFilter } from '../../src/domain/event-filter.js';
import type { NewEvent } from '../../src/domain/model.js';
import { INBOX_TRUST_JSON } from '../../src/domain/trust.js';
import type { OpenedStore } from '../../src/storage/open-store.js';
import { useFreshStore } from './contract-store.js';
import { newAddress, PAGE_BYTES, RATE } from './store-records.js';

const LIMITS = { maxEventsPerAddress: 1000, maxBytesPerAddress: 1 << 30 };

function newEvent(addressId: string, quarantinedAt?: number): NewEvent {
  return {
    id: newEventId(),
    addressId,
    type: 't',
    source: 's',
    data: '{"n":1}',
    metadata: null,
    dedupeKey: null,
    trust: INBOX_TRUST_JSON,
    createdAt: Date.now(),
    ...(quarantinedAt === undefined ? {} : { quarantinedAt }),
  };
}

describe('quarantine and sender policy: store contract', () => {
  let store: OpenedStore;
  useFreshStore((opened) => {
    store = opened;
  });

  async function address(): Promise<string> {
    const a = newAddress();
    await store.createAddress(a, { ...RATE, now: Date.now() });
    return a.id;
  }

  it('an event appended quarantined carries the mark; reads by state keep or leave it out; release sets released_at once', async () => {
    const id = await address();
    const at = Date.now();
    const results = await Promise.all([newEvent(id), newEvent(id, at), newEvent(id), newEvent(id, at)].map((e) => store.appendEvent(e, LIMITS)));
    const created = results.map((r) => (r.kind === 'created' ? r.event : assert.fail(r.kind)));
    assert.deepEqual(created.map((e) => e.sequence).sort(), [1, 2, 3, 4], 'quarantined or not, sequences stay gapless');
    const held = created.filter((e) => e.quarantinedAt === at);
    assert.equal(held.length, 2, 'the append answers the mark it wrote');

    const page = await store.listEvents(id, 0, 10, PAGE_BYTES);
    assert.deepEqual(
      page?.events.map((e) => [e.sequence, e.quarantinedAt ?? null, e.releasedAt ?? null]),
      created.map((e) => [e.sequence, e.quarantinedAt ?? null, null]).sort((x, y) => Number(x[0]) - Number(y[0])),
      'the unfiltered page carries every event with its mark (the service passes over the held ones)',
    );
    const scan = async (state?: string) => (await store.scanEvents(id, 0, parseEventFilter({ type: 't', state }), 10, PAGE_BYTES))!;
    const heldSeqs = held.map((e) => e.sequence).sort();
    const freeSeqs = created
      .filter((e) => e.quarantinedAt === undefined)
      .map((e) => e.sequence)
      .sort();
    assert.deepEqual(
      (await scan()).events.map((e) => e.sequence),
      freeSeqs,
      'no state: the held events are left out',
    );
    assert.equal((await scan()).nextCursor, 4, 'but examined: the cursor moves past them');
    assert.deepEqual(
      (await scan('quarantined')).events.map((e) => e.sequence),
      heldSeqs,
    );
    assert.deepEqual(
      (await scan('all')).events.map((e) => e.sequence),
      [1, 2, 3, 4],
    );
    assert.deepEqual(
      (await scan('unacked')).events.map((e) => e.sequence),
      freeSeqs,
      'unacked means ordinary events not acknowledged',
    );

    const claimed = await store.claimEvents(id, {
      max: 10,
      leaseMs: 60_000,
      maxDeliveries: 5,
      filter: parseEventFilter({}),
      nonce: 'n1',
      now: Date.now(),
      after: 0,
    });
    assert.deepEqual(claimed?.claims.map((c) => c.event.sequence).sort(), freeSeqs, 'a claim never takes a held event');

    const first = held[0]!;
    const released = await store.releaseEvent(id, first.id, at + 5);
    assert.equal(released?.releasedAt, at + 5);
    assert.equal((await store.releaseEvent(id, first.id, at + 9))?.releasedAt, at + 5, 'a second release keeps the first time');
    assert.deepEqual(
      (await scan('quarantined')).events.map((e) => e.sequence),
      [held[1]!.sequence],
    );
    assert.ok(
      (await scan()).events.some((e) => e.id === first.id),
      'released: read by default again, at its own sequence',
    );
    const again = await store.claimEvents(id, {
      max: 10,
      leaseMs: 60_000,
      maxDeliveries: 5,
      filter: parseEventFilter({}),
      nonce: 'n2',
      now: Date.now(),
      after: 0,
    });
    assert.deepEqual(
      again?.claims.map((c) => c.event.id),
      [first.id],
      'released: claimable, while the other stays held',
    );

    const ordinary = created.find((e) => e.quarantinedAt === undefined)!;
    const untouched = await store.releaseEvent(id, ordinary.id, at);
    assert.equal(untouched?.quarantinedAt, undefined, 'an ordinary event is answered unchanged');
    assert.equal(untouched?.releasedAt, undefined);
    assert.equal(await store.releaseEvent(id, newEventId(), at), null, 'no such event');

    // Acknowledging a held event dismisses it: no longer listed as quarantined, still not read by default.
    await store.ackEvent(id, held[1]!.id, Date.now());
    assert.deepEqual((await scan('quarantined')).events, []);
    assert.ok(!(await scan()).events.some((e) => e.id === held[1]!.id));
    assert.ok(!(await scan('acked')).events.some((e) => e.id === held[1]!.id), 'acked lists ordinary events only');
  });

  it('a batch of appends mixing quarantined and ordinary events over several addresses keeps each one gapless', async () => {
    const ids = await Promise.all([address(), address(), address()]);
    const events = Array.from({ length: 60 }, (_, i) => newEvent(ids[i % 3]!, i % 2 === 0 ? Date.now() : undefined));
    const results = await Promise.all(events.map((e) => store.appendEvent(e, LIMITS)));
    for (const id of ids) {
      const page = (await store.listEvents(id, 0, 100, PAGE_BYTES))!;
      assert.deepEqual(
        page.events.map((e) => e.sequence),
        Array.from({ length: 20 }, (_, i) => i + 1),
      );
      for (const e of page.events) {
        const sent = events.find((x) => x.id === e.id)!;
        assert.equal(e.quarantinedAt ?? null, sent.quarantinedAt ?? null, `event ${e.sequence} of ${id} keeps its own mark`);
      }
    }
    assert.equal(results.filter((r) => r.kind === 'created' && r.event.quarantinedAt != null).length, 30);
  });

  it('a sender policy: one row per address, replaced whole, removed, and deleted with the address', async () => {
    const id = await address();
    assert.equal(await store.senderPolicies.getSenderPolicy(id), null);
    assert.equal(await store.senderPolicies.setSenderPolicy(id, '{"capture":{"require_signature":true}}', 1000), true);
    assert.deepEqual(await store.senderPolicies.getSenderPolicy(id), { policy: '{"capture":{"require_signature":true}}', updatedAt: 1000 });
    assert.equal(await store.senderPolicies.setSenderPolicy(id, '{}', 2000), true);
    assert.deepEqual(await store.senderPolicies.getSenderPolicy(id), { policy: '{}', updatedAt: 2000 });
    assert.equal(await store.senderPolicies.setSenderPolicy(id, null, 3000), true);
    assert.equal(await store.senderPolicies.getSenderPolicy(id), null);
    assert.equal(await store.senderPolicies.setSenderPolicy('addr_unknown', '{}', 1), false, 'no address: nothing stored');
    assert.equal(await store.senderPolicies.getSenderPolicy('addr_unknown'), null);

    await store.senderPolicies.setSenderPolicy(id, '{}', 4000);
    assert.equal(await store.deleteAddress(id), true);
    assert.equal(await store.senderPolicies.getSenderPolicy(id), null, 'deleted with its address');
    assert.equal(await store.senderPolicies.setSenderPolicy(id, null, 5000), false);
  });
});
