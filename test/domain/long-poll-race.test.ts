// The long-poll's one race (style habit 3, design.md, "Durability: group commit"): an event committed after a reader's
// read found nothing, but before the reader started waiting. The service registers its waiter
// first, then re-reads, then waits, so that event either shows up in the re-read or wakes the
// waiter. Here a delivery is made at exactly that moment, on a real store: inside the reader's
// re-read, after the page was read. Were the order read-then-register, the notification would find
// no waiter and the reader would sleep through the whole wait with the event in the queue.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import type { Store } from '../../src/domain/ports.js';
import { ReturnAddressService } from '../../src/domain/return-address-service.js';
import { openStore } from '../../src/storage/open-store.js';
import { InProcessWakeupHub } from '../../src/wakeup/wakeup-hub.js';
import { createTestStorage, STORE, type TestStorage, within } from '../helpers.js';

describe(`a long-poll and a delivery racing it (${STORE})`, () => {
  let storage: TestStorage;
  let store: Store;
  const hub = new InProcessWakeupHub();
  let writer: ReturnAddressService;
  let config: ReturnType<typeof loadConfig>;

  before(async () => {
    storage = await createTestStorage();
    config = loadConfig({ ...storage.env, LOG_LEVEL: 'silent' });
    store = await openStore(config);
    writer = new ReturnAddressService(store, hub, config);
  });
  after(async () => {
    hub.shutdown();
    await store.close();
    await storage.drop();
  });

  /** The store as the reader sees it: its `injectAt`-th read of events is followed by `inject()`. */
  function interleaved(injectAt: number, inject: () => Promise<unknown>): { store: Store; reads: () => number } {
    let reads = 0;
    const proxy = new Proxy(store, {
      get(target, prop) {
        if (prop === 'listEvents') {
          return async (addressId: string, afterSeq: number, limit: number, maxBytes: number) => {
            const page = await target.listEvents(addressId, afterSeq, limit, maxBytes);
            if (++reads === injectAt) await inject(); // committed, durable and notified before the reader sees its (empty) page
            return page;
          };
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    return { store: proxy, reads: () => reads };
  }

  it('an event committed between the re-read and the wait still ends the wait at once, with that event', async () => {
    const { address } = await writer.createAddress({}, 'race-test');
    const deliverRaced = () => writer.deliver(address, { type: 'raced' }, undefined, 'https');
    // Read 1 is the plain read; read 2 is the re-read after the waiter was registered.
    const racing = interleaved(2, deliverRaced);
    const reader = new ReturnAddressService(racing.store, hub, config);

    const outcome = await within(reader.listEvents(address, { after: 0, limit: 10, wait: 25 }), 5_000, () => 'still waiting 5 s later' as const);
    hub.notifyAll(); // releases a reader that slept through the event, so the test ends either way
    if (outcome === 'still waiting 5 s later') assert.fail('the reader slept through an event committed before its wait began');
    assert.ok(racing.reads() >= 3, `the reader re-read after being woken (${racing.reads()} reads)`);
    assert.deepEqual(
      outcome.events.map((e) => [e.sequence, e.type]),
      [[1, 'raced']],
    );
    assert.equal(outcome.nextCursor, 1);
    assert.equal(hub.size(), 0, 'no waiter is left behind');
  });
  it('a client leaving during the re-read ends the poll with an empty page and leaves no waiter', async () => {
    const { address } = await writer.createAddress({}, 'race-test');
    const ac = new AbortController();
    const racing = interleaved(2, async () => ac.abort());
    const reader = new ReturnAddressService(racing.store, hub, config);
    const sizeBefore = hub.size();
    const page = await reader.listEvents(address, { after: 0, limit: 10, wait: 25 }, ac.signal);
    assert.deepEqual(page, { events: [], nextCursor: 0, hasMore: false });
    assert.equal(racing.reads(), 2, 'nothing is read after the client left');
    assert.equal(hub.size(), sizeBefore, 'the registered waiter was released');
  });

  it('an address deleted during the re-read ends the poll with not_found, once', async () => {
    const { address } = await writer.createAddress({}, 'race-test');
    const racing = interleaved(2, () => writer.deleteAddress(address));
    const reader = new ReturnAddressService(racing.store, hub, config);
    await assert.rejects(
      within(reader.listEvents(address, { after: 0, limit: 10, wait: 25 }), 5_000, () => 'still waiting'),
      (err: Error & { code?: string }) => err.code === 'not_found',
    );
    assert.equal(hub.size(), 0, 'no waiter is left behind');
  });
});
