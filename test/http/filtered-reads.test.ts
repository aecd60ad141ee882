// Filters on GET …/events and the stream, over real sockets (design.md, "Reading without loss"): a filtered walk
// over sparse matches finds exactly them; a filtered long-poll sleeps through non-matching events
// and wakes for a match; a filtered stream resumes with Last-Event-ID without a gap; bad filters
// are 400 naming the parameter; the largest filter allowed, sent many times at once, leaves the
// service answering.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SCAN_EVENTS } from '../../src/domain/event-filter.js';
import { type Addr, api, createAddress, deliver, range, STORE, sleep, startTestService, type TestService } from '../helpers.js';
import { openStream } from '../sse-client.js';

/** GET …/events with repeated parameters kept as given. */
function read(svc: TestService, a: Addr, params: [string, string | number][], signal?: AbortSignal) {
  const qs = new URLSearchParams(params.map(([k, v]): [string, string] => [k, String(v)])).toString();
  return api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events?${qs}`, { token: a.token, signal });
}

async function deliverMany(svc: TestService, a: Addr, bodies: unknown[]): Promise<number[]> {
  const seqs: number[] = [];
  for (let i = 0; i < bodies.length; i += 50) {
    const rs = await Promise.all(bodies.slice(i, i + 50).map((b) => deliver(svc.baseUrl, a, b)));
    for (const r of rs) {
      assert.equal(r.status, 202, r.text);
      seqs.push(r.json.event.sequence);
    }
  }
  return seqs;
}

describe(`filtered reads over HTTP and SSE (${STORE})`, () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(async () => {
    await svc.stop();
  });

  it('a filtered walk over 1,500 events with 7 sparse matches returns exactly them, in order, and never re-scans', async () => {
    const a = await createAddress(svc.baseUrl);
    const hits = new Set([3, 200, 201, 777, 1000, 1499, 1500]);
    const bodies = range(1, 1500).map((i) =>
      hits.has(i)
        ? { type: i % 2 === 0 ? 'stripe.invoice.paid' : 'stripe.charge.succeeded', data: { livemode: true, n: i } }
        : { type: i % 3 === 0 ? 'stripe.invoice.paid' : 'github.push', data: { livemode: false, n: i } },
    );
    const seqs = await deliverMany(svc, a, bodies);
    const expected = seqs.filter((_, i) => hits.has(i + 1)).sort((x, y) => x - y);
    const found: number[] = [];
    let cursor = 0;
    let pages = 0;
    for (;;) {
      const r = await read(svc, a, [
        ['after', cursor],
        ['limit', 2],
        ['type', 'stripe.*'],
        ['match', 'data.livemode=true'],
      ]);
      assert.equal(r.status, 200, r.text);
      pages++;
      for (const e of r.json.events) {
        assert.ok(e.type.startsWith('stripe.') && e.data.livemode === true);
        assert.ok(e.sequence > cursor && e.sequence <= r.json.next_cursor);
      }
      found.push(...r.json.events.map((e: { sequence: number }) => e.sequence));
      if (!r.json.has_more) {
        assert.equal(r.json.next_cursor, 1500, 'the last page examined the whole queue');
        break;
      }
      assert.ok(r.json.next_cursor > cursor);
      cursor = r.json.next_cursor;
    }
    assert.deepEqual(found, expected);
    assert.ok(pages <= 5, `${pages} pages of 2 for 7 matches`);
    // type is repeatable (any of them), match too (all of them); a digit-only type stays text.
    const r = await read(svc, a, [
      ['type', 'github.push'],
      ['type', 'stripe.charge.succeeded'],
      ['match', 'data.n=3'],
      ['match', 'data.livemode=true'],
    ]);
    assert.deepEqual(
      r.json.events.map((e: { data: { n: number } }) => e.data.n),
      [3],
    );
    assert.equal((await read(svc, a, [['type', '404']])).json.events.length, 0);
  });

  it('a filtered long-poll is not woken by a non-matching event, and is by a matching one', async () => {
    const a = await createAddress(svc.baseUrl);
    const t0 = performance.now();
    const polling = read(svc, a, [
      ['wait', 25],
      ['type', 'wanted'],
      ['match', 'data.ok=true'],
    ]);
    await sleep(200);
    // Non-matching: another type, and the wanted type with ok false.
    await deliver(svc.baseUrl, a, { type: 'other', data: { ok: true } });
    await deliver(svc.baseUrl, a, { type: 'wanted', data: { ok: false } });
    const early = await Promise.race([polling.then(() => 'answered'), sleep(700).then(() => 'still waiting')]);
    assert.equal(early, 'still waiting', 'non-matching events did not end the wait');
    const hit = await deliver(svc.baseUrl, a, { type: 'wanted', data: { ok: true } });
    const r = await polling;
    assert.equal(r.status, 200);
    assert.deepEqual(
      r.json.events.map((e: { id: string }) => e.id),
      [hit.json.event.id],
    );
    assert.equal(r.json.next_cursor, 3);
    assert.ok(performance.now() - t0 < 12_500, 'woken by the match, not by the 25 s timeout (under half of it, however busy the machine)');
    // Timing out, the empty page's next_cursor is the last event examined.
    const empty = await read(svc, a, [
      ['after', 3],
      ['wait', 1],
      ['type', 'wanted'],
    ]);
    assert.deepEqual(empty.json, { events: [], next_cursor: 3, has_more: false });
    await deliver(svc.baseUrl, a, { type: 'other' });
    const past = await read(svc, a, [
      ['after', 3],
      ['wait', 1],
      ['type', 'wanted'],
    ]);
    assert.deepEqual(past.json, { events: [], next_cursor: 4, has_more: false }, 'the examined non-match is passed over');
  });

  it('a filtered stream sends only matches, and resumes with Last-Event-ID without a gap', async () => {
    const a = await createAddress(svc.baseUrl);
    const url = `${svc.baseUrl}/api/v1/addresses/${a.id}/events/stream?type=order.*&match=data.paid=true`;
    const auth = { authorization: `Bearer ${a.token}` };
    const first = await openStream(url, auth);
    assert.equal(first.status, 200, first.body);
    const wanted: number[] = [];
    for (const i of range(1, 30)) {
      const paid = i % 4 === 0;
      const r = await deliver(svc.baseUrl, a, { type: i % 2 === 0 ? 'order.created' : 'ping', data: { paid: paid ? true : 'no' } });
      if (paid) wanted.push(r.json.event.sequence);
    }
    await first.waitForMessages(3);
    first.close();
    const got = first.events().map((e) => e.sequence);
    const lastId = first.messages.at(-1)!.id!;
    for (const i of range(31, 50)) {
      const r = await deliver(svc.baseUrl, a, { type: 'order.paid', data: { paid: i % 5 === 0 } });
      if (i % 5 === 0) wanted.push(r.json.event.sequence);
    }
    const second = await openStream(url, { ...auth, 'last-event-id': lastId });
    const rest = wanted.filter((s) => s > Number(lastId));
    await second.waitForMessages(rest.length);
    await sleep(100);
    second.close();
    assert.deepEqual([...got, ...second.events().map((e) => e.sequence)], wanted.filter((s) => s <= Number(lastId)).concat(rest));
    assert.deepEqual(
      second.events().map((e) => e.sequence),
      rest,
      'every match after Last-Event-ID once, in order',
    );
    for (const e of [...first.events(), ...second.events()]) assert.equal((e as unknown as { data: { paid: unknown } }).data.paid, true);
  });

  it('bad filters are 400 invalid_request naming the parameter and the fix', async () => {
    const a = await createAddress(svc.baseUrl);
    const cases: [[string, string][], RegExp][] = [
      [[['state', 'done']], /'state'.*unacked, acked, dead, quarantined, all/],
      [
        [
          ['state', 'all'],
          ['state', 'acked'],
        ],
        /'state'.*more than once/,
      ],
      [[['match', 'nopair']], /'match'.*no '='.*path=value/],
      [[['match', '=v']], /'match'.*empty/],
      [[['match', 'data..x=v']], /'match'.*empty segment/],
      [[['match', 'date.x=v']], /'match'.*must start with one of data/],
      [range(1, 21).map((i): [string, string] => ['match', `data.k${i}=v`]), /'match'.*at most 20/],
      // Conditions of 4 segments, 3 of them numeric, cost 4 × 2³ = 32 look-ups each: 8 fit the budget of 256, 9 do not.
      [range(1, 9).map((i): [string, string] => ['match', `data.a.0.1.${i}=v`]), /'match'.*cost 288 JSON look-ups.*more than 256.*fewer numeric segments/],
      [[['type', '']], /'type'/],
      [[['type', 'stripe*']], /'type'.*prefix/],
      [[['type', '*']], /'type'/],
      [[['consumer', 'Has Space']], /'consumer'.*a-z, 0-9/],
      [[['consumer', 'x'.repeat(65)]], /'consumer'/],
      [[['filter', 'x']], /Unknown query parameter 'filter'/],
    ];
    for (const [params, message] of cases) {
      const r = await read(svc, a, params);
      assert.equal(r.status, 400, `${JSON.stringify(params)}: ${r.text}`);
      assert.equal(r.json.error.code, 'invalid_request');
      assert.match(r.json.error.message, message, JSON.stringify(params));
      const s = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events/stream?${new URLSearchParams(params)}`, { token: a.token });
      assert.equal(s.status, 400, `stream ${JSON.stringify(params)}: ${s.text}`);
    }
  });

  it(`the largest filter allowed, 40 at once over ${SCAN_EVENTS / 10} events, is bounded work: each answers, and a plain read beside them stays fast`, async () => {
    const a = await createAddress(svc.baseUrl);
    await deliverMany(
      svc,
      a,
      range(1, SCAN_EVENTS / 10).map((i) => ({ type: 'x', data: { links: [{ url: `u${i}` }], deep: { a: { b: { c: i } } } } })),
    );
    // As many types and conditions as allowed, as long as fits in the 16 KiB a request's head may take.
    const params: [string, string][] = [
      ...range(1, 19).map((i): [string, string] => ['type', `${'t'.repeat(100)}${i}.*`]),
      ['type', 'x'], // the events' type: every match condition is evaluated
      ...range(1, 19).map((i): [string, string] => ['match', `data.links.0.url${i}=${'v'.repeat(500)}`]),
      ['match', `data.deep.a.b.c=${'9'.repeat(500)}`],
    ];
    assert.ok(new URLSearchParams(params).toString().length > 12_000);
    const attack = Promise.all(range(1, 40).map(() => read(svc, a, params)));
    const t0 = performance.now();
    const probe = await api(svc.baseUrl, 'GET', '/healthz');
    const probeMs = performance.now() - t0;
    const answers = await attack;
    for (const r of answers) assert.deepEqual([r.status, r.json?.events?.length, r.json?.has_more], [200, 0, false], r.text.slice(0, 200));
    assert.equal(probe.status, 200);
    assert.ok(probeMs < 10_000, `liveness probe answered in ${Math.round(probeMs)} ms beside the attack`);
  });
});
