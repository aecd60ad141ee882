// The fixed rate window (domain/rate-window.ts) as both stores apply it, in countRate and in
// createAddress: never more than the limit in a window under parallel attempts, a refused attempt
// does not count, a window never moves back (a lagging clock counts against the stored window), and
// one window is shared by two store instances on the same file or database. The cases of a single
// attempt at a time are in store-contract.test.ts.
import assert from 'node:assert/strict';
import type { RateDecision } from '../../src/domain/model.js';
import { describeStoreContract } from './contract-store.js';
import { newAddress } from './store-records.js';

const WINDOW = 60_000;
const T0 = 1_900_000_020_000 - (1_900_000_020_000 % WINDOW); // the start of a window
const key = (name: string) => `${name}-${Math.random()}`;
const allowed = (rs: RateDecision[]) => rs.filter((r) => r.allowed).length;

describeStoreContract('Store contract: rate window', [
  {
    name: 'countRate: 50 parallel attempts against a limit of 20 allow exactly 20; the refused ones name the seconds left',
    async run(c) {
      const k = key('par');
      const rs = await Promise.all(Array.from({ length: 50 }, () => c.store.countRate({ key: k, limit: 20, windowMs: WINDOW, now: T0 + 15_000 })));
      assert.equal(allowed(rs), 20);
      for (const r of rs) if (!r.allowed) assert.equal(r.retryAfterSeconds, 45);
      // The refusals did not count: the next window allows the full limit again.
      const next = await Promise.all(Array.from({ length: 25 }, () => c.store.countRate({ key: k, limit: 20, windowMs: WINDOW, now: T0 + WINDOW })));
      assert.equal(allowed(next), 20);
    },
  },
  {
    name: 'createAddress: 30 parallel creations against a limit of 10 insert exactly the 10 allowed',
    async run(c) {
      const k = key('create');
      const addresses = Array.from({ length: 30 }, () => newAddress());
      const rs = await Promise.all(addresses.map((a) => c.store.createAddress(a, { key: k, limit: 10, windowMs: WINDOW, now: T0 + 1_000 })));
      assert.equal(allowed(rs), 10);
      const found = await Promise.all(addresses.map((a) => c.store.getAddress(a.id)));
      assert.deepEqual(
        found.map((f) => f !== null),
        rs.map((r) => r.allowed),
        'exactly the allowed addresses were inserted',
      );
    },
  },
  {
    name: 'countRate: the window never moves back; an attempt from an earlier window counts against the stored one',
    async run(c) {
      const k = key('lag');
      const at = (now: number) => c.store.countRate({ key: k, limit: 2, windowMs: WINDOW, now });
      assert.deepEqual(await at(T0 + WINDOW + 5_000), { allowed: true });
      assert.deepEqual(await at(T0 + 5_000), { allowed: true }, 'counted in the later window');
      assert.deepEqual(await at(T0 + 6_000), { allowed: false, retryAfterSeconds: 114 }, 'the earlier window is not reopened');
      assert.deepEqual(await at(T0 + 2 * WINDOW - 500), { allowed: false, retryAfterSeconds: 1 });
      assert.deepEqual(await at(T0 + 2 * WINDOW), { allowed: true });
      // Keys are independent.
      assert.deepEqual(await c.store.countRate({ key: key('other'), limit: 1, windowMs: WINDOW, now: T0 }), { allowed: true });
    },
  },
  {
    name: 'two store instances on one file or database share the window: parallel attempts from both allow the limit once',
    async run(c) {
      const other = await c.openAnother();
      const k = key('shared');
      const attempt = (i: number) => (i % 2 === 0 ? c.store : other).countRate({ key: k, limit: 15, windowMs: WINDOW, now: T0 + 30_000 });
      assert.equal(allowed(await Promise.all(Array.from({ length: 40 }, (_, i) => attempt(i)))), 15);
      // One instance moves the window forward; the other, with a lagging clock, counts against it.
      assert.deepEqual(await other.countRate({ key: k, limit: 2, windowMs: WINDOW, now: T0 + WINDOW + 1_000 }), { allowed: true });
      assert.deepEqual(await c.store.countRate({ key: k, limit: 2, windowMs: WINDOW, now: T0 + 59_000 }), { allowed: true });
      assert.deepEqual(await c.store.countRate({ key: k, limit: 2, windowMs: WINDOW, now: T0 + 59_500 }), { allowed: false, retryAfterSeconds: 61 });
      // createAddress counts in the same table, across instances too.
      const ck = key('shared-create');
      const r1 = await c.store.createAddress(newAddress(), { key: ck, limit: 1, windowMs: WINDOW, now: T0 });
      const r2 = await other.createAddress(newAddress(), { key: ck, limit: 1, windowMs: WINDOW, now: T0 + 1 });
      assert.deepEqual([r1, r2], [{ allowed: true }, { allowed: false, retryAfterSeconds: 60 }]);
    },
  },
]);
