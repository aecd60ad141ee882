// Pages are bounded in bytes as well as in count (MAX_PAGE_BYTES): a page stops before the event
// that would take its stored JSON past the budget and says has_more, so a cursor walk still reads
// every event once and in order. No event is larger than a page (MAX_EVENT_BYTES <= MAX_PAGE_BYTES),
// so no page needs an "at least one event" exception: a larger event is refused with 413. The same bound holds for
// MCP's list_events, which reads through the same service.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createAddress, deliver, listEvents, STORE } from '../helpers.js';
import { type InjectedService, startInjectedService } from '../inject.js';

const BUDGET = 4096;

describe(`pages bounded by bytes (${STORE})`, () => {
  let svc: InjectedService;
  before(async () => {
    svc = await startInjectedService({ MAX_PAGE_BYTES: String(BUDGET) });
  });
  after(() => svc.stop());

  it('a page of 50 stops at the byte budget, says has_more, and a cursor walk reads every event once', async () => {
    const a = await createAddress(svc.baseUrl);
    const sizes = [1500, 1500, 1500, 100, 100, 4060, 10, 3000, 3000];
    for (const [i, n] of sizes.entries()) {
      const r = await deliver(svc.baseUrl, a, { type: 'sized', data: { i, pad: 'x'.repeat(n) } });
      assert.equal(r.status, 202, r.text);
    }
    const tooLarge = await deliver(svc.baseUrl, a, { type: 'sized', data: { pad: 'x'.repeat(9000) } });
    assert.equal(tooLarge.status, 413, 'an event larger than a page is refused (MAX_EVENT_BYTES defaults to MAX_PAGE_BYTES when that is smaller)');
    assert.match(tooLarge.json.error.message, /MAX_EVENT_BYTES/);
    const first = await listEvents(svc.baseUrl, a, { after: 0, limit: 50 });
    assert.equal(first.status, 200);
    assert.deepEqual(
      first.json.events.map((e: { sequence: number }) => e.sequence),
      [1, 2],
      'two 1.5 KB events fit 4 KB, a third does not',
    );
    assert.equal(first.json.has_more, true);
    assert.equal(first.json.next_cursor, 2);

    const pages: number[][] = [];
    let cursor = 0;
    for (let guard = 0; guard < 20; guard++) {
      const r = await listEvents(svc.baseUrl, a, { after: cursor, limit: 50 });
      assert.equal(r.status, 200, r.text);
      const seqs = r.json.events.map((e: { sequence: number }) => e.sequence);
      pages.push(seqs);
      assert.ok(seqs.length >= 1 || !r.json.has_more, 'a page with more behind it is never empty');
      cursor = r.json.next_cursor;
      if (!r.json.has_more) break;
    }
    assert.deepEqual(
      pages.flat(),
      sizes.map((_, i) => i + 1),
      'every event once, in order',
    );
    assert.ok(
      pages.some((p) => p.length === 1 && p[0] === 6),
      'the 4 KB event, nearly the whole budget, comes alone',
    );
    for (const p of pages) assert.ok(p.length <= 3, `no page past the budget: ${JSON.stringify(pages)}`);
    for (let cursor = 0; cursor < sizes.length; cursor++) {
      const r = await listEvents(svc.baseUrl, a, { after: cursor, limit: 50 });
      assert.ok(Buffer.byteLength(r.text) <= BUDGET + 2048, `a page's rendering stays near its budget: ${Buffer.byteLength(r.text)} bytes after ${cursor}`);
    }
  });

  it('the count limit still applies under the byte budget', async () => {
    const a = await createAddress(svc.baseUrl);
    for (let i = 0; i < 5; i++) assert.equal((await deliver(svc.baseUrl, a, { data: i })).status, 202);
    const r = await listEvents(svc.baseUrl, a, { after: 0, limit: 3 });
    assert.deepEqual(
      r.json.events.map((e: { sequence: number }) => e.sequence),
      [1, 2, 3],
    );
    assert.equal(r.json.has_more, true);
    const rest = await listEvents(svc.baseUrl, a, { after: 3, limit: 50 });
    assert.deepEqual(
      rest.json.events.map((e: { sequence: number }) => e.sequence),
      [4, 5],
    );
    assert.equal(rest.json.has_more, false);
  });
});
