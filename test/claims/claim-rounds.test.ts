// Many claims waiting on one address (claims/claim-rounds.ts), on a real store: a delivery wakes all
// of them, and the claims asking the same thing share the statement that finds nothing left, so the
// store runs a few claim statements per delivery, not one per waiting claim. And sharing never costs
// an event: every event delivered is leased exactly once, by one claim, while they all wait at once.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ClaimService, claimInput } from '../../src/claims/claim-service.js';
import { loadConfig } from '../../src/config.js';
import { ReturnAddressService } from '../../src/domain/return-address-service.js';
import { type OpenedStore, openStore } from '../../src/storage/open-store.js';
import { InProcessWakeupHub } from '../../src/wakeup/wakeup-hub.js';
import { createTestStorage, range, STORE, sleep, type TestStorage, within } from '../helpers.js';

describe(`waiting claims share a statement that finds nothing (${STORE})`, () => {
  let storage: TestStorage;
  let store: OpenedStore;
  let config: ReturnType<typeof loadConfig>;
  let statements = 0;
  /** The real store, its claim statements counted. */
  let counted: OpenedStore;

  before(async () => {
    storage = await createTestStorage();
    config = loadConfig({ ...storage.env, LOG_LEVEL: 'silent' });
    store = await openStore(config);
    counted = new Proxy(store, {
      get(target, prop) {
        if (prop === 'claimEvents') {
          return (...args: Parameters<OpenedStore['claimEvents']>) => {
            statements++;
            return target.claimEvents(...args);
          };
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  });
  after(async () => {
    await store.close();
    await storage.drop();
  });

  for (const filtered of [false, true]) {
    it(`200 ${filtered ? 'filtered' : 'unfiltered'} claims wait; 20 deliveries one by one: each event leased once, a few statements per delivery`, async () => {
      const hub = new InProcessWakeupHub();
      const service = new ReturnAddressService(store, hub, config);
      const claims = new ClaimService(counted, hub);
      const { address } = await service.createAddress({}, 'rounds-test');
      const input = claimInput({ wait: 25, ...(filtered ? { match: 'data.wanted=true' } : {}) });
      const answered: string[][] = [];
      const waiting = range(1, 200).map(() =>
        claims.claimEvents(address, input).then((b) => {
          answered.push(b.claims.map((c) => c.event.id));
          return b;
        }),
      );
      // Every claim has read nothing and waits on the hub (a condition, not a time: a busy machine is slow).
      const allWaiting = (async () => {
        while (hub.size() < 200) await sleep(5);
        return true;
      })();
      assert.equal(await within(allWaiting, 30_000, () => false), true, `200 claims wait (${hub.size()} do)`);
      statements = 0;
      const delivered: string[] = [];
      for (const n of range(1, 20)) {
        const { event } = await service.deliver(address, { type: 'job', data: { n, wanted: true } }, undefined, 'https');
        delivered.push(event.id);
        // The claim that leased it answers; the other claims wait on.
        const settled = (async () => {
          while (answered.length < n) await sleep(5);
          return true;
        })();
        assert.equal(await within(settled, 10_000, () => false), true, `delivery ${n} was claimed`);
        assert.deepEqual(answered.at(-1), [event.id]);
      }
      const duringDeliveries = statements;
      hub.shutdown();
      const all = await Promise.all(waiting);
      const leased = all.flatMap((b) => b.claims.map((c) => c.event.id));
      assert.deepEqual([...leased].sort(), [...delivered].sort(), 'every event leased exactly once');
      console.log(`200 waiting claims (${STORE}, ${filtered ? 'filtered' : 'unfiltered'}): ${duringDeliveries} claim statements for 20 deliveries`);
      // One that leases the event and one that finds nothing left, per delivery (and some slack for
      // claims woken while a round ran); one per waiting claim would be about 4,000.
      assert.ok(duringDeliveries <= 20 * 4, `${duringDeliveries} claim statements for 20 deliveries`);
    });
  }
});
