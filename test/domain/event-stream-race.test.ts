// The event stream's races (event-stream.ts), on a real store and hub: a delivery committed while
// the stream's read is in flight (after the page was read, before the stream sees it) must still
// reach the stream at once, whichever read it races; a shutdown during a read ends the stream; a
// sink that is full stops the reading until it drains.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import type { StreamSink } from '../../src/domain/event-stream.js';
import type { EventRecord } from '../../src/domain/model.js';
import type { Store } from '../../src/domain/ports.js';
import { ReturnAddressService } from '../../src/domain/return-address-service.js';
import { openStore } from '../../src/storage/open-store.js';
import { InProcessWakeupHub } from '../../src/wakeup/wakeup-hub.js';
import { createTestStorage, range, STORE, sleep, type TestStorage, within } from '../helpers.js';

interface Collected {
  sink: StreamSink;
  events: EventRecord[];
  heartbeats: number;
  ended: Promise<unknown>;
  isEnded: () => boolean;
  /** Resolves once n events arrived. */
  until(n: number, ms?: number): Promise<void>;
}

function collect(full?: (events: EventRecord[], resume: () => void) => boolean): Collected {
  const events: EventRecord[] = [];
  let ended = false;
  let endWith: (err: unknown) => void = () => {};
  const c: Collected = {
    events,
    heartbeats: 0,
    ended: new Promise((ok) => {
      endWith = ok;
    }),
    isEnded: () => ended,
    sink: {
      send(page, resume) {
        events.push(...page);
        return full ? full(page, resume) : true;
      },
      heartbeat() {
        c.heartbeats++;
      },
      end(err) {
        ended = true;
        endWith(err ?? 'shutdown');
      },
    },
    async until(n, ms = 3000) {
      const deadline = Date.now() + ms;
      while (events.length < n) {
        if (Date.now() > deadline) assert.fail(`only ${events.length} of ${n} events reached the sink`);
        await sleep(5);
      }
    },
  };
  return c;
}

describe(`an event stream and deliveries racing it (${STORE})`, () => {
  let storage: TestStorage;
  let store: Store;
  let config: ReturnType<typeof loadConfig>;

  before(async () => {
    storage = await createTestStorage();
    config = loadConfig({ ...storage.env, LOG_LEVEL: 'silent' });
    store = await openStore(config);
  });
  after(async () => {
    await store.close();
    await storage.drop();
  });

  /** The store as the stream sees it: after its `injectAt`-th read, `inject()` runs before the page is returned. */
  function interleaved(injectAt: number, inject: () => Promise<unknown>): { store: Store; reads: () => number; injected: Promise<void> } {
    let reads = 0;
    let done: () => void = () => {};
    const injected = new Promise<void>((ok) => {
      done = ok;
    });
    const proxy = new Proxy(store, {
      get(target, prop) {
        if (prop === 'listEvents') {
          return async (addressId: string, afterSeq: number, limit: number, maxBytes: number) => {
            const page = await target.listEvents(addressId, afterSeq, limit, maxBytes);
            if (++reads === injectAt) {
              await inject();
              done();
            }
            return page;
          };
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    return { store: proxy, reads: () => reads, injected };
  }

  // Read 1 is the first read; then each read is the one after a send or after a wake-up, with the
  // waiter registered before it. A second delivery made by the test keeps the stream reading.
  for (const injectAt of [1, 2, 3, 4, 5]) {
    it(`a delivery committed inside read ${injectAt} reaches the stream at once, in order`, async () => {
      const hub = new InProcessWakeupHub();
      const writer = new ReturnAddressService(store, hub, config);
      const { address } = await writer.createAddress({}, 'race');
      await writer.deliver(address, { type: 'first' }, undefined, 'https');
      const racing = interleaved(injectAt, () => writer.deliver(address, { type: 'raced' }, undefined, 'https'));
      const reader = new ReturnAddressService(racing.store, hub, config);
      const c = collect();
      // A heartbeat far away: only a wake-up or a re-read can bring the raced event in time.
      const stream = reader.streamEvents(address, 0, 60_000, c.sink);
      stream.start();
      await c.until(1);
      await writer.deliver(address, { type: 'second' }, undefined, 'https');
      await c.until(2);
      // Keep the stream reading until the race has happened.
      for (let i = 0; racing.reads() < injectAt && i < 5; i++) {
        await writer.deliver(address, { type: 'more' }, undefined, 'https');
        await sleep(20);
      }
      assert.ok(racing.reads() >= injectAt, `the stream made ${racing.reads()} reads`);
      await racing.injected;
      const total = (await store.listEvents(address.id, 0, 100, 1e9))!.events.length;
      await c.until(total);
      assert.deepEqual(
        c.events.map((e) => e.sequence),
        range(1, total),
        'every event once, in order',
      );
      assert.ok(c.events.some((e) => e.type === 'raced'));
      assert.equal(stream.position, total);
      stream.cancel();
      assert.equal(hub.size(), 0, 'no waiter left behind');
    });
  }

  it('50 streams of one address, sharing their reads, each get 100 concurrent deliveries once, in order', async () => {
    const hub = new InProcessWakeupHub();
    const writer = new ReturnAddressService(store, hub, config);
    const { address } = await writer.createAddress({}, 'race');
    let reads = 0;
    const counting = new Proxy(store, {
      get(target, prop) {
        if (prop === 'listEvents')
          return (...args: Parameters<Store['listEvents']>) => {
            reads++;
            return target.listEvents(...args);
          };
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const reader = new ReturnAddressService(counting, hub, config);
    const streams = range(1, 50).map(() => {
      const c = collect();
      const stream = reader.streamEvents(address, 0, 60_000, c.sink);
      stream.start();
      return { c, stream };
    });
    await Promise.all(range(1, 100).map((i) => writer.deliver(address, { type: `t${i}` }, undefined, 'https')));
    for (const { c, stream } of streams) {
      await c.until(100);
      await sleep(10);
      assert.deepEqual(
        c.events.map((e) => e.sequence),
        range(1, 100),
      );
      stream.cancel();
    }
    assert.ok(reads < 50, `reads are shared: ${reads} reads for 50 streams (each reading alone: at least 100)`);
    assert.equal(hub.size(), 0);
  });

  it('a shutdown during a read ends the stream once, and no waiter is left', async () => {
    const hub = new InProcessWakeupHub();
    const writer = new ReturnAddressService(store, hub, config);
    const { address } = await writer.createAddress({}, 'race');
    const racing = interleaved(1, async () => hub.shutdown());
    const reader = new ReturnAddressService(racing.store, hub, config);
    const c = collect();
    reader.streamEvents(address, 0, 60_000, c.sink).start();
    assert.equal(await within(c.ended, 3000, () => 'still open'), 'shutdown');
    assert.equal(hub.size(), 0);
  });

  it('a full sink stops the reading until it drains, then the stream goes on in order', async () => {
    const hub = new InProcessWakeupHub();
    const writer = new ReturnAddressService(store, hub, config);
    const { address } = await writer.createAddress({}, 'race');
    for (const i of range(1, 3)) await writer.deliver(address, { type: `t${i}` }, undefined, 'https');
    let resumeLater: (() => void) | undefined;
    const c = collect((_page, resume) => {
      resumeLater = resume;
      return false;
    });
    const stream = writer.streamEvents(address, 0, 60_000, c.sink);
    stream.start();
    await c.until(3);
    for (const i of range(4, 6)) await writer.deliver(address, { type: `t${i}` }, undefined, 'https');
    await sleep(100);
    assert.equal(c.events.length, 3, 'nothing more is read while the sink is full');
    assert.equal(hub.size(), 0, 'a blocked stream holds no waiter');
    resumeLater?.();
    await c.until(6);
    assert.deepEqual(
      c.events.map((e) => e.sequence),
      range(1, 6),
    );
    stream.cancel();
  });

  it('the heartbeat comes after each idle interval, and deleting the address ends the stream with not_found', async () => {
    const hub = new InProcessWakeupHub();
    const writer = new ReturnAddressService(store, hub, config);
    const { address } = await writer.createAddress({}, 'race');
    const c = collect();
    writer.streamEvents(address, 0, 50, c.sink).start();
    await sleep(400);
    assert.ok(c.heartbeats >= 3, `${c.heartbeats} heartbeats in 400 ms at 50 ms`);
    await writer.deleteAddress(address);
    const err = await within(c.ended, 3000, () => 'still open');
    assert.equal((err as { code?: string }).code, 'not_found');
    assert.equal(hub.size(), 0);
  });
});
