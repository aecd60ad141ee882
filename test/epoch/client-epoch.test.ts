// The TypeScript client notices a new store epoch: consume() reads its address again from the start
// and skips the event ids it has handled, so nothing is lost and nothing handled runs twice. The
// service is real; the restore is played by the client's fetch, which reports a new epoch from a
// chosen moment on (a real restore is test/epoch/restore.test.ts).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { pageEpoch, ReturnAddress } from '@return-address/client';
import { STORE, startTestService, type TestService } from '../helpers.js';

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
