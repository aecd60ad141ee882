// MAX_BYTES_PER_ADDRESS, so a few huge events cannot fill a disk: an address holds a bounded number of bytes, not only a bounded
// number of events. Past it the oldest acknowledged events are pruned, as few as make room; when the
// acknowledged events cannot make room the delivery is 429 queue_full; an event bigger than the whole
// quota is 413. Checked over HTTP on both stores, with a small quota.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { api, createAddress, deliver, listEvents, range } from '../helpers.js';
import { type InjectedService, startInjectedService } from '../inject.js';

const QUOTA = 10_000;
/** An event whose data is a string of `n` ASCII characters stores n + 2 bytes (its JSON quotes). */
const blob = (n: number) => ({ data: 'x'.repeat(n - 2) });

describe('per-address byte quota', () => {
  let svc: InjectedService;
  before(async () => {
    svc = await startInjectedService({ MAX_BYTES_PER_ADDRESS: String(QUOTA) });
  });
  after(() => svc.stop());

  it('fills to the quota, refuses more while nothing is acknowledged, then prunes the fewest acknowledged events', async () => {
    const base = svc.baseUrl;
    const a = await createAddress(base);
    for (const i of range(1, 4)) assert.equal((await deliver(base, a, blob(2_500))).status, 202, `event ${i}`);
    const full = await deliver(base, a, blob(100));
    assert.deepEqual([full.status, full.json.error.code], [429, 'queue_full']);
    assert.match(full.json.error.message, /MAX_BYTES_PER_ADDRESS \(10000 bytes\)/);
    assert.ok(full.headers.get('retry-after'));

    const events = (await listEvents(base, a)).json.events;
    for (const e of events.slice(0, 3)) assert.equal((await api(base, 'POST', `/api/v1/addresses/${a.id}/events/${e.id}/ack`, { token: a.token })).status, 200);
    // 4 x 2,500 = 10,000 stored; 4,000 more needs 4,000 freed: two of the three acknowledged events.
    const next = await deliver(base, a, blob(4_000));
    assert.equal(next.status, 202, next.text);
    const left = (await listEvents(base, a)).json.events;
    assert.deepEqual(
      left.map((e: { sequence: number }) => e.sequence),
      [3, 4, 5],
    );
    // Sequences never restart: the next one is 6.
    assert.equal((await deliver(base, a, blob(10))).json.event.sequence, 6);
  });

  it('an event larger than the whole quota is 413 on the inbox and the capture URL, and stores nothing', async () => {
    const base = svc.baseUrl;
    const a = await createAddress(base);
    const tooBig = await deliver(base, a, blob(QUOTA + 1));
    assert.deepEqual([tooBig.status, tooBig.json.error.code], [413, 'payload_too_large']);
    assert.match(tooBig.json.error.message, /MAX_BYTES_PER_ADDRESS/);
    const captured = await api(base, 'POST', a.body.endpoints.hook_url, { body: 'y'.repeat(QUOTA), headers: { 'content-type': 'text/plain' } });
    assert.equal(captured.status, 413, 'a capture stores its body twice (parsed and raw)');
    assert.deepEqual((await listEvents(base, a)).json.events, []);
  });

  it('counts the quota per address, under concurrent deliveries', async () => {
    const base = svc.baseUrl;
    const [a, b] = await Promise.all([createAddress(base), createAddress(base)]);
    const answers = await Promise.all(range(1, 30).map((i) => deliver(base, i % 2 ? a : b, blob(1_000))));
    // 10 of 1,000 bytes fit in each address; the other 5 per address are refused, none is lost.
    assert.equal(answers.filter((r) => r.status === 202).length, 20);
    assert.equal(answers.filter((r) => r.status === 429).length, 10);
    for (const x of [a, b])
      assert.deepEqual(
        (await listEvents(base, x)).json.events.map((e: { sequence: number }) => e.sequence),
        range(1, 10),
      );
  });
});
