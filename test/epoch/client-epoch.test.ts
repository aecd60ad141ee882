// The TypeScript client notices a new store epoch: consume() reads its address again from the start
// and skips the event ids it has handled, so nothing is lost and nothing handled runs twice. The
// service is real; the restore is played by the client's fetch, which reports a new epoch from a
// chosen moment on. The second case is a real restore (restore-helper.ts) under a consume() that runs
// until stopped: its long-poll is cut by the restart, and the read after the failure does not wait,
// so the new epoch is seen at once, not after a long-poll past the end of the (shorter) queue.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MAX_WAIT_SECONDS, pageEpoch, ReturnAddress } from '@return-address/client';
import { STORE, sleep, startTestService, type TestService } from '../helpers.js';
import { restorableService, restorer } from './restore-helper.js';

describe(`the client and a new epoch (${STORE})`, () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(async () => {
    await svc.stop();
  });

  it('consume re-reads from the start on a new epoch and hands each event id over once', async () => {
    let restored = false;
    const reads: string[] = [];
    const fetchWithRestore: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      const url = String(input);
      if (!url.includes('/events?')) return res;
      reads.push(new URL(url).searchParams.get('after') ?? '');
      if (!restored) return res;
      const headers = new Headers(res.headers);
      headers.set('return-address-epoch', 'f'.repeat(32));
      return new Response(await res.text(), { status: res.status, headers });
    };
    const ra = await ReturnAddress.create({ url: svc.baseUrl, fetch: fetchWithRestore });
    for (let i = 1; i <= 3; i++) await ra.deliver({ data: i });
    const first = await ra.page({ after: 0 });
    assert.match(pageEpoch(first)?.epoch ?? '', /^[0-9a-f]{32}$/);
    assert.equal(pageEpoch(first)?.lastSequence, 3);

    const handled: unknown[] = [];
    await ra.consume((e) => void handled.push(e.data), { idleSeconds: 0, ack: false });
    assert.deepEqual(handled, [1, 2, 3]);
    assert.equal(ra.cursor, 3);

    restored = true;
    await ra.deliver({ data: 4 });
    reads.length = 0;
    await ra.consume((e) => void (handled as unknown[]).push(e.data), { idleSeconds: 0, ack: false });
    assert.equal(reads[0], '3', 'it read on from its cursor');
    assert.ok(reads.includes('0'), `then from the start on seeing the new epoch (reads after ${reads.join(', ')})`);
    assert.deepEqual(handled, [1, 2, 3, 4], 'events handled before are skipped, the new one handled once');
    assert.equal(ra.epoch, 'f'.repeat(32));
  });
});

describe(`the client's consume() and a real restore (${STORE})`, () => {
  const s = restorableService();

  it('after the failed read, reads without waiting, sees the new epoch and handles the new event once', async () => {
    // Every read of the events, with what it asked and what came of it.
    interface Read {
      after: string | null;
      wait: string | null;
      epoch?: string | null;
      status?: number;
      failed?: true;
    }
    const reads: Read[] = [];
    const recording: typeof fetch = async (input, init) => {
      const url = String(input);
      if (!url.includes('/events?')) return fetch(input, init);
      const q = new URL(url).searchParams;
      const read: Read = { after: q.get('after'), wait: q.get('wait') };
      reads.push(read);
      try {
        const res = await fetch(input, init);
        read.status = res.status;
        read.epoch = res.headers.get('return-address-epoch');
        return res;
      } catch (err) {
        read.failed = true;
        throw err;
      }
    };
    const until = async (what: string, holds: () => boolean, ms: number) => {
      for (const end = Date.now() + ms; !holds(); await sleep(50)) assert.ok(Date.now() < end, `${what}: not within ${ms} ms; reads ${JSON.stringify(reads)}`);
    };

    const ra = await ReturnAddress.create({ url: s.svc.baseUrl, fetch: recording });
    const r = restorer(s.storage);
    for (let i = 1; i <= 2; i++) await ra.deliver({ data: i });
    await r.backup();
    await ra.deliver({ data: 3 });

    const handled: unknown[] = [];
    const stop = new AbortController();
    const running = ra.consume((e) => void handled.push(e.data), { ack: false, signal: stop.signal }).catch((err: unknown) => err);
    try {
      // Handled 1..3, and now long-polling past the end of the queue.
      await until('consume handles 1..3 and long-polls after 3', () => reads.some((x) => x.after === '3' && x.wait === String(MAX_WAIT_SECONDS)), 30_000);
      assert.deepEqual(handled, [1, 2, 3]);
      const oldEpoch = ra.epoch;
      assert.match(oldEpoch ?? '', /^[0-9a-f]{32}$/);

      s.svc = await r.restore(s.svc);
      // The long-poll's wait is MAX_WAIT_SECONDS (25 s) from the first read after the restart; the
      // retry backoff is at most 5 s. Without the read that does not wait, this takes 25 s or more.
      await until('consume sees the new epoch', () => ra.epoch !== oldEpoch, (MAX_WAIT_SECONDS - 5) * 1000);
      const first = reads.findIndex((x) => x.epoch !== undefined && x.epoch !== null && x.epoch !== oldEpoch);
      assert.ok(first > 0, JSON.stringify(reads));
      const before = reads[first - 1] as Read;
      assert.ok(before.failed === true || (before.status ?? 0) >= 500, `the read before the new epoch failed: ${JSON.stringify(reads)}`);
      assert.equal(reads[first]?.wait, '0', `the first read after the failure does not wait: ${JSON.stringify(reads)}`);
      assert.equal(reads[first]?.after, '3', 'it read on from where it was');
      assert.ok(
        reads.slice(first + 1).some((x) => x.after === '0'),
        `then from the start: ${JSON.stringify(reads.slice(first))}`,
      );

      // A new event after the restore (on SQLite at a sequence the client had passed) is handled once.
      await ra.deliver({ data: 'new' });
      await until('consume handles the new event', () => (handled as unknown[]).includes('new'), 30_000);
      assert.deepEqual(handled as unknown[], [1, 2, 3, 'new'], 'the events handled before the restore are skipped');
      // It goes back to long-polling: the next reads wait again.
      await until('consume long-polls again', () => reads.at(-1)?.wait === String(MAX_WAIT_SECONDS), 30_000);
    } finally {
      stop.abort();
      await running;
    }
    assert.deepEqual(handled, [1, 2, 3, 'new']);
  });
});
