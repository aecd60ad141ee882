// Bodies whose escaping is expensive must not stall a batch: quote- and backslash-heavy bodies of a megabyte, many at once, through the group commit
// of each store (and through the capture URL, which stores a body twice). On PostgreSQL a batch of
// them once travelled as TEXT[] array literals, whose escaping took seconds and gigabytes; now such
// items are committed alone as scalar parameters (append-batcher.ts). Here: all stored, exact, gapless.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { api, createAddress, listEvents, range, STORE, startTestService } from '../helpers.js';

describe(`quote-heavy megabyte bodies (${STORE})`, () => {
  it('40 concurrent 1.2 MB deliveries and 10 captures of escapes are stored exactly, in order', { timeout: 120_000 }, async () => {
    const svc = await startTestService({ MAX_PAYLOAD_BYTES: String(4 * 1024 * 1024), MAX_PAGE_BYTES: String(64 * 1024 * 1024) });
    try {
      const a = await createAddress(svc.baseUrl);
      const text = `${'"\\'.repeat(200_000)}\u0000"`;
      const body = JSON.stringify({ data: { text } });
      const answers = await Promise.all(
        range(1, 40).map(() => api(svc.baseUrl, 'POST', a.inboxUrl, { body, headers: { 'content-type': 'application/json' } })),
      );
      assert.deepEqual([...new Set(answers.map((r) => r.status))], [202]);
      const captures = await Promise.all(
        range(1, 10).map(() => api(svc.baseUrl, 'POST', a.body.endpoints.hook_url, { body, headers: { 'content-type': 'application/json' } })),
      );
      assert.deepEqual([...new Set(captures.map((r) => r.status))], [202]);
      let after = 0;
      let seen = 0;
      for (;;) {
        const page = await listEvents(svc.baseUrl, a, { after, limit: 10 });
        for (const e of page.json.events) {
          assert.equal(e.sequence, ++seen);
          assert.equal(e.source === 'https' && e.type === 'http.request' ? e.data.body.data.text : e.data.text, text);
          after = e.sequence;
        }
        if (!page.json.has_more) break;
      }
      assert.equal(seen, 50);
    } finally {
      await svc.stop();
    }
  });
});
