// PostgreSQL page reads that wait for a connection share one statement (postgres-reads.ts): 100
// streams attaching to one address with 12 MB of events decoded those rows 100 times on the event
// loop. The rule must not cost freshness: a read joined is one not yet sent, so its snapshot comes
// after every call that joined it and each caller sees what was committed before its call; a read
// already sent is never joined. Real PostgreSQL, a read pool of one connection held by the test.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pg from 'pg';
import { PostgresReads } from '../../src/storage/postgres/postgres-reads.js';
import { PostgresStore } from '../../src/storage/postgres/postgres-store.js';
import { createTestStorage, onlyPostgres, range } from '../helpers.js';
import { newEvent, ROOMY } from './contract-store.js';
import { newAddress, PAGE_BYTES, RATE } from './store-records.js';

describe('PostgreSQL page reads waiting for a connection share one statement', { skip: onlyPostgres }, () => {
  it('21 identical reads queued behind a busy pool run once and see what was committed before their calls; a read already sent is not joined', async () => {
    const storage = await createTestStorage();
    const url = storage.databaseUrl!;
    const store = new PostgresStore({ connectionString: url, poolSize: 2, statementTimeoutMs: 10_000 });
    const pool = new pg.Pool({ connectionString: url, max: 1, application_name: 'read-sharing-test' });
    const locker = new pg.Client({ connectionString: url });
    let acquired = 0;
    pool.on('acquire', () => acquired++);
    try {
      await store.migrate();
      const reads = new PostgresReads(pool);
      const a = newAddress();
      assert.deepEqual(await store.createAddress(a, { ...RATE, now: Date.now() }), { allowed: true });
      await store.appendEvent(newEvent(a.id), ROOMY);

      // The pool's one connection is busy: every read waits for it.
      const busy = await pool.connect();
      const first = reads.listEvents(a.id, 0, 100, PAGE_BYTES);
      await store.appendEvent(newEvent(a.id), ROOMY); // committed after the first call, before any read was sent
      const rest = range(1, 20).map(() => reads.listEvents(a.id, 0, 100, PAGE_BYTES));
      const other = reads.listEvents(a.id, 1, 100, PAGE_BYTES); // another cursor: a read of its own
      busy.release();
      const pages = await Promise.all([first, ...rest]);
      assert.equal(acquired, 3, 'the held connection, one statement for the 21 identical reads, one for the other cursor');
      for (const p of pages)
        assert.deepEqual(
          p?.events.map((e) => e.sequence),
          [1, 2],
          'each saw the event committed before its call',
        );
      assert.deepEqual(
        (await other)?.events.map((e) => e.sequence),
        [2],
      );

      // A read already sent (held by a lock on the table) is not joined by a later identical call.
      await locker.connect();
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE events IN ACCESS EXCLUSIVE MODE');
      const sent = reads.listEvents(a.id, 0, 100, PAGE_BYTES);
      for (let i = 0; ; i++) {
        const w = await locker.query("SELECT 1 FROM pg_stat_activity WHERE application_name = 'read-sharing-test' AND wait_event_type = 'Lock'");
        if (w.rowCount === 1) break;
        assert.ok(i < 500, 'the first read never reached the lock');
        await new Promise((r) => setTimeout(r, 20));
      }
      const later = reads.listEvents(a.id, 0, 100, PAGE_BYTES);
      await locker.query('COMMIT');
      assert.deepEqual(
        (await sent)?.events.map((e) => e.sequence),
        [1, 2],
      );
      assert.deepEqual(
        (await later)?.events.map((e) => e.sequence),
        [1, 2],
      );
      assert.equal(acquired, 5, 'the later call ran a statement of its own');
    } finally {
      await locker.end().catch(() => {});
      await pool.end();
      await store.close();
      await storage.drop();
    }
  });
});
