// Filtered waiters screen the changes of their address (design.md, "The wakeup hub and followers"):
// a change that holds nothing for a waiter's filter costs it one in-memory evaluation of one shared
// read. Its registration and timer stay (no new registration per change), its cursor moves past
// what was examined, and a change that does hold a match still ends its wait at once, also when
// that change is committed while the shared read is in flight. Real store, real hub.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { parseEventFilter } from '../../src/domain/event-filter.js';
import type { Page } from '../../src/domain/model.js';
import type { Store, Waiter, WakeListener } from '../../src/domain/ports.js';
import { ReturnAddressService } from '../../src/domain/return-address-service.js';
import { openStore } from '../../src/storage/open-store.js';
import { InProcessWakeupHub } from '../../src/wakeup/wakeup-hub.js';
import { createTestStorage, STORE, type TestStorage, within } from '../helpers.js';

/** The hub, counting registrations: a screened waiter registers once for all the changes it sleeps through. */
class CountingHub extends InProcessWakeupHub {
  registrations = 0;
  override register(addressId: string, timeoutMs: number, listener: WakeListener, keep?: boolean): Waiter {
    this.registrations++;
    return super.register(addressId, timeoutMs, listener, keep);
  }
}

describe(`filtered waiters screen the changes of their address (${STORE})`, () => {
  let storage: TestStorage;
  let store: Store;
  const hub = new CountingHub();
  let writer: ReturnAddressService;
  let config: ReturnType<typeof loadConfig>;
  const wanted = parseEventFilter({ type: 'wanted', match: 'data.ok=true' });

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

  /** The store as readers see it, counting reads of events; `onRead` runs after a read, before its page is seen. */
  function counted(onRead?: (n: number) => Promise<unknown>): { store: Store; reads: () => number } {
    let reads = 0;
    const proxy = new Proxy(store, {
      get(target, prop) {
        if (prop === 'listEvents') {
          return async (addressId: string, afterSeq: number, limit: number, maxBytes: number) => {
            const page = await target.listEvents(addressId, afterSeq, limit, maxBytes);
            await onRead?.(++reads);
            return page;
          };
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    return { store: proxy, reads: () => reads };
  }

  /** Resolves once the hub holds `n` waiters (the polls are registered and waiting). */
  async function waiting(n: number): Promise<void> {
    for (let i = 0; i < 500 && hub.size() < n; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(hub.size(), n, 'every poll waits on the hub');
  }

  it('100 waiters sleep through 20 non-matching deliveries on one shared read each, registered once, and all wake for a match', async () => {
    const { address } = await writer.createAddress({}, 'screen-test');
    const c = counted();
    const reader = new ReturnAddressService(c.store, hub, config);
    const polls: Promise<Page>[] = [];
    for (let i = 0; i < 100; i++)
      polls.push(reader.listEvents(address, { after: 0, limit: 10, wait: 25, filter: parseEventFilter({ type: 'wanted', match: 'data.ok=true' }) }));
    await waiting(100);
    const registered = hub.registrations;
    const readsBefore = c.reads();
    for (let i = 0; i < 20; i++) {
      await writer.deliver(address, { type: i % 2 ? 'other' : 'wanted', data: { ok: false } }, undefined, 'https');
      // The screen of this change has answered before the next one.
      await new Promise((r) => setImmediate(r));
    }
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(hub.size(), 100, 'no waiter ended on a change that held nothing for it');
    assert.equal(hub.registrations, registered, 'no waiter registered again');
    assert.ok(c.reads() - readsBefore <= 20, `one shared read per change, not one per waiter (${c.reads() - readsBefore} reads for 20 changes)`);
    const hit = await writer.deliver(address, { type: 'wanted', data: { ok: true } }, undefined, 'https');
    const pages = await within(Promise.all(polls), 5_000, () => 'still waiting 5 s after the match' as const);
    if (pages === 'still waiting 5 s after the match') assert.fail(pages);
    for (const page of pages) {
      assert.deepEqual(
        page.events.map((e) => e.id),
        [hit.event.id],
      );
      assert.equal(page.nextCursor, 21);
    }
    assert.equal(hub.size(), 0, 'no waiter is left behind');
  });

  it('a waiter that times out answers a cursor past the non-matching events it screened', async () => {
    const { address } = await writer.createAddress({}, 'screen-test');
    const polling = writer.listEvents(address, { after: 0, limit: 10, wait: 1, filter: wanted });
    await waiting(1);
    await writer.deliver(address, { type: 'other' }, undefined, 'https');
    await writer.deliver(address, { type: 'wanted', data: { ok: false } }, undefined, 'https');
    assert.deepEqual(await polling, { events: [], nextCursor: 2, hasMore: false });
    assert.equal(hub.size(), 0);
  });

  it('a match committed while the shared read of an earlier change is in flight still ends the wait at once', async () => {
    const { address } = await writer.createAddress({}, 'screen-test');
    let hitId = '';
    let screenRead = 0;
    // Read 1: the poll's plain read; read 2: its re-read once registered; read 3: the screen of the
    // non-matching change. The match is committed and notified inside read 3, after its page was read.
    const c = counted(async (n) => {
      if (n === screenRead) hitId = (await writer.deliver(address, { type: 'wanted', data: { ok: true } }, undefined, 'https')).event.id;
    });
    const reader = new ReturnAddressService(c.store, hub, config);
    const polling = reader.listEvents(address, { after: 0, limit: 10, wait: 25, filter: wanted });
    await waiting(1);
    screenRead = c.reads() + 1;
    await writer.deliver(address, { type: 'other' }, undefined, 'https');
    const outcome = await within(polling, 5_000, () => 'still waiting 5 s later' as const);
    hub.notifyAll(); // releases a poll that slept through the match, so the test ends either way
    if (outcome === 'still waiting 5 s later') assert.fail('the waiter slept through a match committed during its screen');
    assert.deepEqual(
      outcome.events.map((e) => e.id),
      [hitId],
    );
    assert.equal(hub.size(), 0, 'no waiter is left behind');
  });

  it('a filtered stream sleeps through non-matching changes registered once, and sends each match in order', async () => {
    const { address } = await writer.createAddress({}, 'screen-test');
    const sent: string[] = [];
    let ended = false;
    let heartbeats = 0;
    const stream = writer.streamEvents(
      address,
      0,
      60_000,
      {
        send: (events) => {
          for (const e of events) sent.push(e.id);
          return true;
        },
        heartbeat: () => heartbeats++,
        end: () => {
          ended = true;
        },
      },
      wanted,
    );
    stream.start();
    await waiting(1);
    const registered = hub.registrations;
    for (let i = 0; i < 10; i++) await writer.deliver(address, { type: 'other', data: { ok: true } }, undefined, 'https');
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(hub.registrations, registered, 'the stream did not register again for changes that held nothing for it');
    assert.equal(stream.position, 10, 'its cursor moved past what the screens examined');
    const hits: string[] = [];
    for (let i = 0; i < 3; i++) hits.push((await writer.deliver(address, { type: 'wanted', data: { ok: true } }, undefined, 'https')).event.id);
    for (let i = 0; i < 500 && sent.length < 3; i++) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(sent, hits, 'every match, in order, none twice');
    assert.equal(stream.position, 13);
    assert.equal(heartbeats, 0);
    stream.cancel();
    assert.equal(ended, false, 'a cancelled stream does not call its sink');
    assert.equal(hub.size(), 0, 'no waiter is left behind');
  });

  it('deleting the address ends a screened wait with not_found', async () => {
    const { address } = await writer.createAddress({}, 'screen-test');
    const polling = writer.listEvents(address, { after: 0, limit: 10, wait: 25, filter: wanted });
    await waiting(1);
    const ended = assert.rejects(
      within(polling, 5_000, () => 'still waiting'),
      (err: Error & { code?: string }) => err.code === 'not_found',
    );
    await writer.deliver(address, { type: 'other' }, undefined, 'https');
    await writer.deleteAddress(address);
    await ended;
    assert.equal(hub.size(), 0);
  });
});
