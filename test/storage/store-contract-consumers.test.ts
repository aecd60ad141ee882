// Named consumers' positions as both stores must keep them (consumer-positions.ts; SQLite in one
// transaction, PostgreSQL with an UPDATE and an insert under the address's lock): a seek stores the
// position it is given (a reader may seek back to replay), one row per name whatever the races, the
// per-address cap never passed by parallel new names, and a name already stored is never refused.
import assert from 'node:assert/strict';
import type { ConsumerPositions } from '../../src/consumers/consumer-positions.js';
import { onlyPostgres } from '../helpers.js';
import { describeStoreContract } from './contract-store.js';

const T = 1_900_000_000_000;

describeStoreContract('Store contract: consumers', [
  {
    name: 'seek stores the position given, forward or back; position, list and remove',
    async run(c) {
      const a = await c.address();
      const p: ConsumerPositions = c.store.consumers;
      assert.equal(await p.position(a.id, 'w'), null, 'a name never stored has no position');
      assert.equal(await p.seek(a.id, 'w', 5, T, 10), 'stored');
      assert.equal(await p.seek(a.id, 'w', 9, T + 1, 10), 'stored');
      assert.equal(await p.position(a.id, 'w'), 9);
      assert.equal(await p.seek(a.id, 'w', 2, T + 2, 10), 'stored', 'seeking back to replay is allowed');
      assert.equal(await p.position(a.id, 'w'), 2);
      assert.equal(await p.seek(a.id, 'big', 2 ** 53 - 1, T + 3, 10), 'stored');
      assert.deepEqual(await p.list(a.id), [
        { name: 'big', cursor: 2 ** 53 - 1, updatedAt: T + 3 },
        { name: 'w', cursor: 2, updatedAt: T + 2 },
      ]);
      assert.equal(await p.remove(a.id, 'w'), true);
      assert.equal(await p.remove(a.id, 'w'), false);
      assert.equal(await p.position(a.id, 'w'), null);
      assert.equal(await p.seek('addr_unknown', 'w', 1, T, 10), 'address_gone');
    },
  },
  {
    name: 'parallel seeks of one name: one row, holding one of the positions written, and the last one written after',
    async run(c) {
      const a = await c.address();
      const p = c.store.consumers;
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => p.seek(a.id, 'shared', i + 1, T + i, 10)));
      assert.deepEqual(new Set(results), new Set(['stored']));
      const rows = await p.list(a.id);
      assert.equal(rows.length, 1);
      const [row] = rows;
      assert.ok(row && row.cursor >= 1 && row.cursor <= 50);
      assert.equal(row.updatedAt - T, row.cursor - 1, 'cursor and updated_at come from the same write');
      // Sequential writes after the race: each one is what is read back.
      for (const cursor of [7, 3, 11]) {
        await p.seek(a.id, 'shared', cursor, T + 100, 10);
        assert.equal(await p.position(a.id, 'shared'), cursor);
      }
    },
  },
  {
    name: 'parallel new names against the cap: exactly the cap is stored, the rest refused too_many',
    async run(c) {
      const a = await c.address();
      const p = c.store.consumers;
      const results = await Promise.all(Array.from({ length: 60 }, (_, i) => p.seek(a.id, `c${i}`, i, T, 25)));
      assert.equal(results.filter((r) => r === 'stored').length, 25);
      assert.equal(results.filter((r) => r === 'too_many').length, 35);
      const rows = await p.list(a.id);
      assert.equal(rows.length, 25);
      for (const r of rows) assert.equal(results[Number(r.name.slice(1))], 'stored', `${r.name} was answered stored`);
      // A stored name still moves at the cap; a new one is refused.
      assert.equal(await p.seek(a.id, rows[0]!.name, 1_000, T + 1, 25), 'stored');
      assert.equal(await p.seek(a.id, 'one-more', 0, T + 1, 25), 'too_many');
    },
  },
  {
    name: 'at the cap less one, parallel first seeks of one new name are all stored (the name, once stored, is never refused)',
    async run(c) {
      const a = await c.address();
      const p = c.store.consumers;
      for (let i = 0; i < 9; i++) assert.equal(await p.seek(a.id, `old${i}`, 0, T, 10), 'stored');
      const results = await Promise.all(Array.from({ length: 30 }, (_, i) => p.seek(a.id, 'newcomer', i, T + i, 10)));
      assert.deepEqual(
        results.filter((r) => r !== 'stored'),
        [],
        'the newcomer took the last place; its other seeks move it',
      );
      assert.equal((await p.list(a.id)).length, 10);
    },
  },
  {
    name: 'consumers go with their address',
    async run(c) {
      const a = await c.address();
      await c.store.consumers.seek(a.id, 'w', 3, T, 10);
      assert.equal(await c.store.deleteAddress(a.id), true);
      assert.deepEqual(await c.store.consumers.list(a.id), []);
      assert.deepEqual(await c.query('SELECT name FROM consumers WHERE address_id = ?', [a.id]), []);
    },
  },
  {
    name: 'two instances seeking new names and one shared name at once: the cap holds, the shared name is stored once and never refused',
    skip: onlyPostgres && 'SQLite has one writing process by design; PostgreSQL instances share the consumers table',
    async run(c) {
      const other = await c.openAnother();
      const a = await c.address();
      const seeks = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? c.store : other).consumers.seek(a.id, i < 20 ? `n${i}` : 'shared', i, T, 10));
      const results = await Promise.all(seeks);
      const rows = await c.store.consumers.list(a.id);
      assert.equal(rows.length, 10);
      const shared = results.slice(20);
      if (rows.some((r) => r.name === 'shared')) assert.deepEqual(new Set(shared), new Set(['stored']), 'once stored, never refused');
      else assert.deepEqual(new Set(shared), new Set(['too_many']));
      assert.equal(results.filter((r) => r === 'stored').length, rows.some((r) => r.name === 'shared') ? 9 + 20 : 10);
    },
  },
]);
