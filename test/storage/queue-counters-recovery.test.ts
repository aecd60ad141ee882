// The queue's counters (the next sequence, the events and bytes an address holds) survive a kill -9
// exactly. The SQLite store keeps them in memory and writes them to the address's row lazily
// (src/storage/sqlite/sqlite-queue-counters.ts), so after a crash it must recount what the row does
// not cover yet; PostgreSQL writes them in every append. The same checks hold on both stores: the
// sequence goes on without reuse, the event and byte quotas refuse and prune exactly as before the
// crash, and the counters match the rows.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { api, createAddress, createTestStorage, deliver, STORE, spawnService } from '../helpers.js';
import { countersAgainstRows } from '../operations/helpers.js';

/** Data of `n` ASCII characters: n + 2 bytes stored (its JSON quotes). */
const sized = (n: number) => ({ data: 'x'.repeat(n - 2) });

describe(`queue counters across a kill -9 (${STORE})`, () => {
  it('sequences, the event quota and the byte quota are exact after a crash that came before the counters were written', { timeout: 60_000 }, async () => {
    const storage = await createTestStorage();
    const env = { LOG_LEVEL: 'warn', MAX_EVENTS_PER_ADDRESS: '6', MAX_BYTES_PER_ADDRESS: '6000' };
    let svc = await spawnService(env, storage);
    try {
      const a = await createAddress(svc.baseUrl);
      const b = await createAddress(svc.baseUrl);
      // Within one flush interval of the counters (1 s): the crash comes before the rows are written.
      for (let i = 1; i <= 4; i++) assert.equal((await deliver(svc.baseUrl, a, { data: { n: i } })).json.event.sequence, i);
      assert.equal((await deliver(svc.baseUrl, b, sized(2_500))).status, 202);
      assert.equal((await deliver(svc.baseUrl, b, sized(2_500))).status, 202);
      svc.proc.kill('SIGKILL');
      await svc.exited;

      svc = await spawnService(env, storage, svc);
      // The event quota: 4 held, 2 more fit, the 7th is refused while nothing is acknowledged.
      assert.equal((await deliver(svc.baseUrl, a, { data: { n: 5 } })).json.event.sequence, 5);
      assert.equal((await deliver(svc.baseUrl, a, { data: { n: 6 } })).json.event.sequence, 6);
      const full = await deliver(svc.baseUrl, a, { data: { n: 7 } });
      assert.deepEqual([full.status, full.json.error.code], [429, 'queue_full']);
      // The byte quota: 5,000 held of 6,000, so 1,000 fit and 1,001 do not.
      const over = await deliver(svc.baseUrl, b, sized(1_001));
      assert.deepEqual([over.status, over.json.error.code], [429, 'queue_full']);
      assert.equal((await deliver(svc.baseUrl, b, sized(1_000))).json.event.sequence, 3);

      // Acknowledging the first two events of a lets two more in, pruning exactly those two.
      const page = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events`, { token: a.token });
      for (const e of page.json.events.slice(0, 2)) {
        assert.equal((await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/events/${e.id}/ack`, { token: a.token })).status, 200);
      }
      assert.equal((await deliver(svc.baseUrl, a, { data: { n: 7 } })).json.event.sequence, 7);
      assert.equal((await deliver(svc.baseUrl, a, { data: { n: 8 } })).json.event.sequence, 8);
      assert.equal((await deliver(svc.baseUrl, a, { data: { n: 9 } })).status, 429);
      const left = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events`, { token: a.token });
      assert.deepEqual(
        left.json.events.map((e: { sequence: number }) => e.sequence),
        [3, 4, 5, 6, 7, 8],
      );

      // A second crash right after pruning, then the counters against the rows.
      svc.proc.kill('SIGKILL');
      await svc.exited;
      for (const c of await countersAgainstRows(storage)) {
        assert.equal(c.event_count, c.rows, `event_count of ${c.id}`);
        assert.equal(c.event_bytes, c.row_bytes, `event_bytes of ${c.id}`);
      }
      svc = await spawnService(env, storage, svc);
      assert.equal((await deliver(svc.baseUrl, b, { data: { n: 1 } })).status, 429, 'b holds 6,000 bytes, none acknowledged');
      const next = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events?after=8`, { token: a.token });
      assert.deepEqual(next.json.events, []);
    } finally {
      svc.proc.kill('SIGKILL');
      await svc.exited;
      await storage.drop();
    }
  });
});
