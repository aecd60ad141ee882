// Filters evaluated by the store (event-filter-sql.ts) against the one matching rule in JavaScript
// (event-match.ts), on a real store: random events (random trust too) and random filters, every filtered walk equals
// the events the JS rule keeps; a sparse walk over many non-matching events finds exactly the
// matches, never re-scans and never skips; the scan's bound answers has_more.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CLAIM_WINDOW_EVENTS, newLeaseNonce } from '../../src/claims/claim-rules.js';
import { ClaimService } from '../../src/claims/claim-service.js';
import { loadConfig } from '../../src/config.js';
import { type EventFilter, MAX_MATCH_ARRAY_MEMBERS, parseEventFilter, SCAN_EVENTS } from '../../src/domain/event-filter.js';
import { eventMatches } from '../../src/domain/event-match.js';
import type { AddressRecord, EventRecord } from '../../src/domain/model.js';
import { eventObject } from '../../src/domain/representation.js';
import { ReturnAddressService } from '../../src/domain/return-address-service.js';
import { INBOX_TRUST, type Trust, trustJson } from '../../src/domain/trust.js';
import { type OpenedStore, openStore } from '../../src/storage/open-store.js';
import { InProcessWakeupHub } from '../../src/wakeup/wakeup-hub.js';
import { createTestStorage, STORE, type TestStorage } from '../helpers.js';

/** A small seeded PRNG, so a failure names the seed that reproduces it. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TYPES = ['stripe.invoice.paid', 'stripe.charge', 'stripe', 'github.push', 'email.received', 'a.b.c'];
const SCALARS: unknown[] = [
  'x',
  'y',
  'true',
  'null',
  '7',
  '07',
  7,
  7.5,
  0,
  -1,
  true,
  false,
  null,
  '',
  'a@b.c',
  'é',
  1e21,
  '1e+21',
  'capture',
  'inbox',
  'github',
  'example.com',
];
/** Trusts the service writes (domain/trust.ts), the column a trust.* path is evaluated on. */
const TRUSTS = [
  INBOX_TRUST,
  { ingress: 'capture', verified: true, method: 'github', identity: 'github', reason: null },
  { ingress: 'capture', verified: false, method: 'github', identity: null, reason: 'x' },
  { ingress: 'capture', verified: null, method: null, identity: null, reason: 'true' },
  { ingress: 'email', verified: true, method: 'dmarc', identity: 'example.com', reason: null },
  { ingress: 'email', verified: null, method: null, identity: null, reason: '' },
] as const satisfies readonly Trust[];
const KEYS = ['k', 'from', 'ok', 'n', '0', '1', 'a.b', 'q"x', 'sp ace'];

function randomValue(r: () => number, depth: number): unknown {
  const roll = r();
  if (depth >= 3 || roll < 0.55) return SCALARS[Math.floor(r() * SCALARS.length)];
  if (roll < 0.78) return Array.from({ length: Math.floor(r() * 4) }, () => randomValue(r, depth + 1));
  const o: Record<string, unknown> = {};
  for (let i = Math.floor(r() * 4); i > 0; i--) o[KEYS[Math.floor(r() * KEYS.length)]!] = randomValue(r, depth + 1);
  return o;
}

function randomPath(r: () => number): string {
  const roll = r();
  if (roll < 0.08) return 'type';
  if (roll < 0.12) return 'source';
  if (roll < 0.16) return 'sequence';
  if (roll < 0.22) return `metadata.${['m', 'n'][Math.floor(r() * 2)]}`;
  if (roll < 0.34) return `trust.${['ingress', 'verified', 'method', 'identity', 'reason', 'verified.x', 'ingress.0'][Math.floor(r() * 7)]}`;
  const segments = ['data'];
  for (let i = Math.floor(r() * 3); i >= 0; i--) segments.push(KEYS[Math.floor(r() * KEYS.length)]!);
  return segments.join('.');
}

const text = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

describe(`filters evaluated by the store, against the JavaScript rule (${STORE})`, () => {
  let storage: TestStorage;
  let store: OpenedStore;
  let service: ReturnAddressService;

  before(async () => {
    storage = await createTestStorage();
    // Room for more events than one scan examines.
    const config = loadConfig({ ...storage.env, LOG_LEVEL: 'silent', MAX_EVENTS_PER_ADDRESS: String(SCAN_EVENTS * 2) });
    store = await openStore(config);
    service = new ReturnAddressService(store, new InProcessWakeupHub(), config);
  });
  after(async () => {
    await store.close();
    await storage.drop();
  });

  /** Every event after 0 that passes the filter, walked page by page with the scan's next cursor. */
  async function walk(addressId: string, filter: EventFilter, limit: number): Promise<{ events: EventRecord[]; reads: number }> {
    const events: EventRecord[] = [];
    let cursor = 0;
    let reads = 0;
    for (;;) {
      const page = await store.scanEvents(addressId, cursor, filter, limit, 1e9);
      assert.ok(page, 'the address exists');
      reads++;
      assert.ok(page.nextCursor >= cursor, 'the cursor never goes back');
      if (page.events.length > 0) assert.ok(page.events[0]!.sequence > cursor);
      for (const e of page.events) assert.ok(e.sequence <= page.nextCursor);
      events.push(...page.events);
      if (!page.hasMore) return { events, reads };
      assert.ok(page.nextCursor > cursor, 'a page with more to come moves the cursor');
      cursor = page.nextCursor;
    }
  }

  /** The same walk through the service's reads: shared windows, the filter evaluated in memory (event-filter-eval.ts). */
  async function walkInMemory(address: AddressRecord, filter: EventFilter, limit: number): Promise<{ events: EventRecord[]; reads: number }> {
    const events: EventRecord[] = [];
    let cursor = 0;
    let reads = 0;
    for (;;) {
      const page = await service.listEvents(address, { after: cursor, limit, wait: 0, filter });
      reads++;
      events.push(...page.events);
      if (!page.hasMore) return { events, reads };
      assert.ok(page.nextCursor > cursor, 'a page with more to come moves the cursor');
      cursor = page.nextCursor;
    }
  }

  it('random events, random filters: the store keeps exactly what event-match.ts keeps', async () => {
    const seed = Number(process.env.FILTER_SEED ?? Date.now() % 100_000);
    const r = prng(seed);
    const { address } = await service.createAddress({}, 'filters');
    const stored: EventRecord[] = [];
    for (let i = 0; i < 150; i++) {
      const metadata = r() < 0.5 ? { m: ['x', 'true', '7'][Math.floor(r() * 3)]!, n: 'y' } : undefined;
      const d = await service.deliver(
        address,
        {
          type: TYPES[Math.floor(r() * TYPES.length)]!,
          source: r() < 0.5 ? 'https' : 'email',
          data: randomValue(r, 0),
          ...(metadata ? { metadata } : {}),
        },
        undefined,
        'https',
        'other',
        trustJson(TRUSTS[Math.floor(r() * TRUSTS.length)]!),
      );
      stored.push(d.event);
    }
    if (Math.floor(r() * 2) === 0) for (const e of stored.filter((_, i) => i % 3 === 0)) await store.ackEvent(address.id, e.id, Date.now());
    const current = (await store.listEvents(address.id, 0, 1000, 1e9))!.events;
    for (let round = 0; round < 60; round++) {
      const types = Array.from({ length: Math.floor(r() * 3) }, () => (r() < 0.3 ? 'stripe.*' : TYPES[Math.floor(r() * TYPES.length)]!));
      const match = Array.from({ length: Math.floor(r() * 3) }, () => `${randomPath(r)}=${text(SCALARS[Math.floor(r() * SCALARS.length)])}`);
      const state = (['all', 'unacked', 'acked'] as const)[Math.floor(r() * 3)]!;
      const filter = parseEventFilter({ type: types, match, state });
      const wanted = current.filter((e) => {
        const o = eventObject(e);
        if (types.length > 0 && !eventMatches(o, { type: types })) return false;
        for (const m of match) {
          const i = m.indexOf('=');
          if (!eventMatches(o, { match: { [m.slice(0, i)]: m.slice(i + 1) } })) return false;
        }
        return state === 'all' || (state === 'acked') === (e.acknowledgedAt !== null);
      });
      const limit = 1 + Math.floor(r() * 7);
      const { events } = await walk(address.id, filter, limit);
      assert.deepEqual(
        events.map((e) => e.sequence),
        wanted.map((e) => e.sequence),
        `seed ${seed}, filter ${JSON.stringify({ types, match, state })}`,
      );
      const inMemory = await walkInMemory(address, filter, limit);
      assert.deepEqual(
        inMemory.events.map((e) => e.sequence),
        wanted.map((e) => e.sequence),
        `in memory: seed ${seed}, filter ${JSON.stringify({ types, match, state })}`,
      );
    }
  });

  it('JSON true and the string "true" both match =true; 7 matches =7 but not =07; an object never matches', async () => {
    const { address } = await service.createAddress({}, 'filters');
    const data = [{ ok: true }, { ok: 'true' }, { ok: false }, { ok: [true, 'x'] }, { ok: { v: true } }, {}, { n: 7 }, { n: '07' }, { n: 7.0 }, { n: [1, 7] }];
    for (const d of data) await service.deliver(address, { type: 't', data: d }, undefined, 'https');
    const seqs = async (m: string) => {
      const sql = (await walk(address.id, parseEventFilter({ match: m }), 100)).events.map((e) => e.sequence);
      const inMemory = (await walkInMemory(address, parseEventFilter({ match: m }), 100)).events.map((e) => e.sequence);
      assert.deepEqual(inMemory, sql, `in memory as in SQL: ${m}`);
      return sql;
    };
    assert.deepEqual(await seqs('data.ok=true'), [1, 2, 4]);
    assert.deepEqual(await seqs('data.ok=false'), [3]);
    assert.deepEqual(await seqs('data.n=7'), [7, 9, 10]);
    assert.deepEqual(await seqs('data.n=07'), [8]);
    assert.deepEqual(await seqs('data.ok.v=true'), [5]);
    assert.deepEqual(await seqs('data.ok=[object Object]'), []);
  });

  it('sparse matches among 3,000 non-matching events: the walk finds each match once, never re-scans, never skips', async () => {
    const { address } = await service.createAddress({}, 'filters');
    const expected: number[] = [];
    for (let i = 1; i <= 3000; i += 100) {
      const batch = await Promise.all(
        Array.from({ length: 100 }, (_, j) => {
          const hit = (i + j) % 499 === 0 || i + j === 1 || i + j === 3000;
          return service.deliver(address, { type: hit ? 'stripe.invoice.paid' : 'github.push', data: { n: i + j, ok: hit } }, undefined, 'https');
        }),
      );
      for (const d of batch) if (d.event.type === 'stripe.invoice.paid') expected.push(d.event.sequence);
    }
    expected.sort((a, b) => a - b);
    const { events, reads } = await walk(address.id, parseEventFilter({ type: 'stripe.*', match: 'data.ok=true' }), 2);
    assert.deepEqual(
      events.map((e) => e.sequence),
      expected,
    );
    assert.ok(reads <= expected.length / 2 + 2, `${reads} reads for ${expected.length} matches, two a page`);
    const inMemory = await walkInMemory(address, parseEventFilter({ type: 'stripe.*', match: 'data.ok=true' }), 2);
    assert.deepEqual(
      inMemory.events.map((e) => e.sequence),
      expected,
    );
    assert.ok(inMemory.reads <= expected.length / 2 + 2, `${inMemory.reads} reads in memory for ${expected.length} matches, two a page`);
  });

  it(`a scan examines at most ${SCAN_EVENTS} events: reaching the bound answers has_more and the last event examined`, async () => {
    const { address } = await service.createAddress({}, 'filters');
    const total = SCAN_EVENTS + 5;
    // Straight into the store in large batches: the deliveries are not what is tested here.
    for (let i = 0; i < total; i += 500) {
      await Promise.all(
        Array.from({ length: Math.min(500, total - i) }, (_, j) =>
          service.deliver(address, { type: i + j === total - 1 ? 'wanted' : 'other' }, undefined, 'https'),
        ),
      );
    }
    const first = await store.scanEvents(address.id, 0, parseEventFilter({ type: 'wanted' }), 10, 1e9);
    assert.deepEqual(first, { events: [], nextCursor: SCAN_EVENTS, hasMore: true });
    const second = await store.scanEvents(address.id, first!.nextCursor, parseEventFilter({ type: 'wanted' }), 10, 1e9);
    assert.deepEqual(
      second!.events.map((e) => e.sequence),
      [total],
    );
    assert.equal(second!.nextCursor, total);
    assert.equal(second!.hasMore, false);
    assert.equal(await store.scanEvents('addr_missing', 0, parseEventFilter({ type: 'x' }), 10, 1e9), null);
    // In memory, over shared windows: the same bound, the same cursors.
    const firstInMemory = await service.listEvents(address, { after: 0, limit: 10, wait: 0, filter: parseEventFilter({ type: 'wanted' }) });
    assert.deepEqual(firstInMemory, { events: [], nextCursor: SCAN_EVENTS, hasMore: true });
    const secondInMemory = await service.listEvents(address, { after: SCAN_EVENTS, limit: 10, wait: 0, filter: parseEventFilter({ type: 'wanted' }) });
    assert.deepEqual([secondInMemory.events.map((e) => e.sequence), secondInMemory.nextCursor, secondInMemory.hasMore], [[total], total, false]);
  });

  it(`an array matches by one of its first ${MAX_MATCH_ARRAY_MEMBERS} members, in SQL and in memory alike`, async () => {
    const { address } = await service.createAddress({}, 'filters');
    const long = Array.from({ length: MAX_MATCH_ARRAY_MEMBERS + 50 }, (_, i) => `m${i}`);
    await service.deliver(address, { type: 't', data: { to: long } }, undefined, 'https');
    for (const [value, expected] of [
      ['m0', [1]],
      [`m${MAX_MATCH_ARRAY_MEMBERS - 1}`, [1]],
      [`m${MAX_MATCH_ARRAY_MEMBERS}`, []],
      [`m${MAX_MATCH_ARRAY_MEMBERS + 49}`, []],
    ] as const) {
      const filter = parseEventFilter({ match: `data.to=${value}` });
      assert.deepEqual(
        (await walk(address.id, filter, 10)).events.map((e) => e.sequence),
        expected,
        `SQL, ${value}`,
      );
      assert.deepEqual(
        (await walkInMemory(address, filter, 10)).events.map((e) => e.sequence),
        expected,
        `in memory, ${value}`,
      );
    }
    // An index past the bound still addresses its member directly.
    const direct = parseEventFilter({ match: `data.to.${MAX_MATCH_ARRAY_MEMBERS + 10}=m${MAX_MATCH_ARRAY_MEMBERS + 10}` });
    assert.deepEqual((await walk(address.id, direct, 10)).events.length, 1);
    assert.deepEqual((await walkInMemory(address, direct, 10)).events.length, 1);
  });

  it(`a filtered claim examines one window of open events after its cursor (${CLAIM_WINDOW_EVENTS} events), and says where it got to`, async () => {
    const { address } = await service.createAddress({}, 'filters');
    const total = 2 * CLAIM_WINDOW_EVENTS + 1;
    for (let i = 0; i < total; i += 250) {
      await Promise.all(
        Array.from({ length: Math.min(250, total - i) }, (_, j) =>
          service.deliver(address, { type: 'job', data: { wanted: i + j === total - 1 } }, undefined, 'https'),
        ),
      );
    }
    const filter = parseEventFilter({ match: 'data.wanted=true' });
    const claim = (after: number) =>
      store.claimEvents(address.id, { max: 5, leaseMs: 60_000, maxDeliveries: 5, filter, nonce: newLeaseNonce(), now: Date.now(), after });
    const first = await claim(0);
    assert.deepEqual(
      [first?.claims.length, first?.window?.examinedTo, first?.window?.examined, first?.window?.more],
      [0, CLAIM_WINDOW_EVENTS, CLAIM_WINDOW_EVENTS, true],
    );
    const second = await claim(CLAIM_WINDOW_EVENTS);
    assert.deepEqual([second?.claims.length, second?.window?.examinedTo, second?.window?.more], [0, 2 * CLAIM_WINDOW_EVENTS, true]);
    const third = await claim(2 * CLAIM_WINDOW_EVENTS);
    assert.deepEqual(
      [third?.claims.map((c) => c.event.sequence), third?.window?.examinedTo, third?.window?.examined, third?.window?.more],
      [[total], total, 1, false],
    );
    // Past the last open event: nothing examined, the cursor stays.
    const past = await claim(total);
    assert.deepEqual([past?.claims.length, past?.window?.examinedTo, past?.window?.examined, past?.window?.more], [0, total, 0, false]);
    // Through the service, a claim that answers at once walks the windows and finds it (leased above: now the next one).
    await service.deliver(address, { type: 'job', data: { wanted: true } }, undefined, 'https');
    const batch = await new ClaimService(store, new InProcessWakeupHub()).claimEvents(address, {
      max: 1,
      lease_seconds: 60,
      wait: 0,
      max_deliveries: 5,
      match: ['data.wanted=true'],
    });
    assert.deepEqual(
      batch.claims.map((c) => c.event.sequence),
      [total + 1],
    );
    // Leases that ran out make both claimable again: a claim whose cursor is past them still takes them.
    const later = await store.claimEvents(address.id, {
      max: 5,
      leaseMs: 60_000,
      maxDeliveries: 5,
      filter,
      nonce: newLeaseNonce(),
      now: Date.now() + 120_000,
      after: total + 1,
    });
    assert.deepEqual(
      later?.claims.map((c) => c.event.sequence),
      [total, total + 1],
    );
  });
});
