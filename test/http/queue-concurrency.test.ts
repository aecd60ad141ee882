// The queue's promises under parallel load (design.md, "The queue"): gapless sequences, one event per
// idempotency key, readers that never skip, long-polls that wake, end on delete and on shutdown.
// The parallel requests go through inject (the app over a real store, all at once in one process);
// a client that hangs up and the process's shutdown keep a real socket and a started service.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Addr, api, createAddress, deliver, listEvents, range, sleep, startTestService, type TestService } from '../helpers.js';
import { type InjectedService, startInjectedService } from '../inject.js';

describe('queue under concurrency', () => {
  let svc: InjectedService;
  let base: string;
  before(async () => {
    svc = await startInjectedService();
    base = svc.baseUrl;
  });
  after(() => svc.stop());

  it('100 parallel deliveries to one address get sequences exactly 1..100', async () => {
    const a = await createAddress(base);
    const res = await Promise.all(range(1, 100).map((i) => deliver(base, a, { data: i })));
    for (const r of res) assert.equal(r.status, 202, r.text);
    const seqs = res.map((r) => r.json.event.sequence as number).sort((x, y) => x - y);
    assert.deepEqual(seqs, range(1, 100));
    assert.equal(new Set(res.map((r) => r.json.event.id)).size, 100, 'every event has its own id');
    const page = await listEvents(base, a, { limit: 100 });
    assert.deepEqual(
      page.json.events.map((e: { sequence: number }) => e.sequence),
      range(1, 100),
    );
    // The payload each delivery got back is the one stored at its sequence.
    const bySeq = new Map(page.json.events.map((e: { sequence: number; data: number }) => [e.sequence, e.data]));
    for (const r of res) assert.equal(bySeq.get(r.json.event.sequence), r.json.event.data);
  });

  it('parallel deliveries to 20 addresses keep each address gapless from 1', async () => {
    const addrs = await Promise.all(range(1, 20).map(() => createAddress(base)));
    await Promise.all(addrs.flatMap((a) => range(1, 10).map(() => deliver(base, a, {}))));
    for (const a of addrs) {
      const page = await listEvents(base, a, { limit: 100 });
      assert.deepEqual(
        page.json.events.map((e: { sequence: number }) => e.sequence),
        range(1, 10),
      );
    }
  });

  it('50 parallel retries with one key create one event: one 202, 49 duplicates of it', async () => {
    const a = await createAddress(base);
    const res = await Promise.all(range(1, 50).map((i) => deliver(base, a, { data: i }, 'same-key')));
    assert.deepEqual(res.map((r) => r.status).sort(), [...Array(49).fill(200), 202].sort());
    const created = res.find((r) => r.status === 202)!.json.event;
    for (const r of res) {
      assert.deepEqual(r.json.event, created, 'every caller gets the original event');
      assert.equal(r.json.duplicate, r.status === 200);
    }
    const page = await listEvents(base, a);
    assert.equal(page.json.events.length, 1);
    assert.equal(page.json.events[0].dedupe_key, 'same-key');
  });

  it('parallel retries mixing header and body keys still dedupe as one key', async () => {
    const a = await createAddress(base);
    const res = await Promise.all(range(1, 20).map((i) => (i % 2 ? deliver(base, a, { data: i }, 'k1') : deliver(base, a, { data: i, dedupe_key: 'k1' }))));
    assert.equal(res.filter((r) => r.status === 202).length, 1);
    assert.equal(new Set(res.map((r) => r.json.event.id)).size, 1);
  });

  it('readers walking the cursor while writers run see every sequence exactly once, in order', async () => {
    const a = await createAddress(base);
    const total = 200;
    const writers = range(1, 4).map(async (w) => {
      for (let i = 0; i < total / 4; i++) {
        const r = await deliver(base, a, { data: { w, i } });
        assert.equal(r.status, 202, r.text);
      }
    });
    const reader = async () => {
      const seen: number[] = [];
      let cursor = 0;
      while (seen.length < total) {
        const r = await listEvents(base, a, { after: cursor, limit: 7, wait: 2 });
        assert.equal(r.status, 200, r.text);
        const seqs = r.json.events.map((e: { sequence: number }) => e.sequence);
        assert.deepEqual(seqs, range(cursor + 1, cursor + seqs.length), `page after ${cursor} is contiguous`);
        assert.equal(r.json.next_cursor, seqs.length ? seqs.at(-1) : cursor);
        seen.push(...seqs);
        cursor = r.json.next_cursor;
      }
      return seen;
    };
    const readers = range(1, 3).map(reader);
    await Promise.all(writers);
    for (const seen of await Promise.all(readers)) assert.deepEqual(seen, range(1, total));
  });

  it('a long-poll returns as soon as an event arrives, with that event', async () => {
    const a = await createAddress(base);
    const waiting = listEvents(base, a, { wait: 20 });
    await sleep(200);
    const t0 = performance.now();
    const d = await deliver(base, a, { data: 'wake' });
    const r = await waiting;
    const latency = performance.now() - t0;
    assert.equal(r.status, 200);
    assert.deepEqual(r.json.events, [d.json.event]);
    assert.ok(latency < 5000, `the read returned long before its 20 s wait ended (${latency.toFixed(1)} ms after the delivery)`);
  });

  it('many waiting readers of one address all wake on one event; other addresses stay asleep', async () => {
    const a = await createAddress(base);
    const b = await createAddress(base);
    const readersA = range(1, 20).map(() => listEvents(base, a, { wait: 20 }));
    const readerB = listEvents(base, b, { wait: 1 });
    await sleep(200);
    const d = await deliver(base, a, { data: 1 });
    for (const r of await Promise.all(readersA)) assert.deepEqual(r.json.events, [d.json.event]);
    const rb = await readerB;
    assert.deepEqual(rb.json, { events: [], next_cursor: 0, has_more: false });
    assert.ok(rb.ms >= 900, `b waited its full second (${rb.ms.toFixed(0)} ms)`);
  });

  it('deleting the address ends its waiting reads with 404 at once', async () => {
    const a = await createAddress(base);
    const waiting = listEvents(base, a, { wait: 20 });
    await sleep(200);
    const t0 = performance.now();
    assert.equal((await api(base, 'DELETE', `/api/v1/addresses/${a.id}`, { token: a.token })).status, 204);
    const r = await waiting;
    assert.equal(r.status, 404);
    assert.equal(r.json.error.code, 'not_found');
    // At once means on the deletion, not at the 20 s wait's end: under half of it holds on a busy machine.
    assert.ok(performance.now() - t0 < 10_000);
  });
});

describe('a client that hangs up, over a socket', () => {
  let svc: TestService;
  let base: string;
  before(async () => {
    svc = await startTestService();
    base = svc.baseUrl;
  });
  after(() => svc.stop());

  it('a client that gives up on a long-poll frees its waiter', async () => {
    const a = await createAddress(base);
    const before = svc.running.hub.size();
    const ac = new AbortController();
    const waiting = listEvents(base, a, { wait: 20 }, ac.signal).catch((e: Error) => e);
    // Conditions, each with a bound for a hang (10 s), not a count of sleeps a busy machine outlasts.
    const registeredBy = performance.now() + 10_000;
    while (svc.running.hub.size() === before && performance.now() < registeredBy) await sleep(20);
    assert.equal(svc.running.hub.size(), before + 1, 'the long-poll registered a waiter');
    ac.abort();
    assert.ok((await waiting) instanceof Error);
    const goneBy = performance.now() + 10_000;
    while (svc.running.hub.size() > before && performance.now() < goneBy) await sleep(20);
    assert.equal(svc.running.hub.size(), before, 'the waiter is gone once the client is');
  });
});

describe('shutdown', () => {
  it('ends waiting reads with an empty 200 page instead of dropping them', async () => {
    const svc = await startTestService();
    const addrs: Addr[] = await Promise.all(range(1, 5).map(() => createAddress(svc.baseUrl)));
    await deliver(svc.baseUrl, addrs[0]!, {});
    const waits = addrs.map((a, i) => listEvents(svc.baseUrl, a, { after: i === 0 ? 1 : 0, wait: 20 }));
    await sleep(300);
    const t0 = performance.now();
    const stopping = svc.stop();
    const res = await Promise.all(waits);
    for (const [i, r] of res.entries()) {
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.json, { events: [], next_cursor: i === 0 ? 1 : 0, has_more: false });
    }
    assert.ok(performance.now() - t0 < 10_000, 'shutdown did not wait for the 20 s long-polls to time out');
    await stopping;
  });
});
