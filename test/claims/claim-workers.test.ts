// Claims under concurrency (design.md, "Claims"): parallel claimers never hold live leases on one
// event (on PostgreSQL across two instances of the service on one database), and 8 workers over
// 1,000 events with a quarter of the handlers failing (nack) or dying (lease abandoned) leave every
// event acknowledged exactly once or dead. The counts are printed as test diagnostics.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { type Addr, api, createAddress, deliver, listEvents, range, STORE, sleep } from '../helpers.js';
import { type InjectedService, startInjectedService } from '../inject.js';

interface ClaimJson {
  event: { id: string; sequence: number };
  lease_id: string;
  delivery_count: number;
}

describe('claims under concurrency', () => {
  let svc: InjectedService;
  let second: InjectedService | undefined;
  let bases: string[];
  before(async () => {
    svc = await startInjectedService();
    // Two instances on one database where the store allows it (PostgreSQL); SQLite has one writer.
    if (STORE === 'postgres') second = await startInjectedService({}, svc.storage);
    bases = second ? [svc.baseUrl, second.baseUrl] : [svc.baseUrl];
  });
  after(async () => {
    await second?.stop({ keepStorage: true });
    await svc.stop();
  });

  const claim = (base: string, a: Addr, json: unknown) => api(base, 'POST', `/api/v1/addresses/${a.id}/claims`, { token: a.token, json });

  it('48 parallel claimers over 300 events: each event leased exactly once while its lease lives', async () => {
    const a = await createAddress(svc.baseUrl);
    await Promise.all(range(1, 300).map((i) => deliver(svc.baseUrl, a, { data: i })));
    const leases = new Map<string, number>();
    const claimer = async (n: number) => {
      const base = bases[n % bases.length]!;
      for (let empty = 0; empty < 2; ) {
        const r = await claim(base, a, { max: 1 + (n % 4), lease_seconds: 600 });
        assert.equal(r.status, 200, r.text);
        if (r.json.claims.length === 0) empty++;
        for (const c of r.json.claims as ClaimJson[]) leases.set(c.event.id, (leases.get(c.event.id) ?? 0) + 1);
      }
    };
    await Promise.all(range(1, 48).map(claimer));
    assert.equal(leases.size, 300, 'every event was claimed');
    const doubled = [...leases].filter(([, n]) => n !== 1);
    assert.deepEqual(doubled, [], 'no event holds two live leases');
  });

  it('8 workers, 1,000 events, a quarter of the handlers failing or dying: every event acked exactly once or dead', async (t) => {
    const a = await createAddress(svc.baseUrl);
    for (const chunk of range(0, 9)) await Promise.all(range(1, 100).map((i) => deliver(svc.baseUrl, a, { data: chunk * 100 + i })));
    const handled = new Map<string, number>(); // handler successes per event
    const acks = new Map<string, number>(); // 200 answers to a claim's ack per event
    const counts = { deliveries: 0, succeeded: 0, failed_nacked: 0, died_abandoned: 0, lease_lost: 0 };
    let stop = false;
    // Deterministic per event and delivery: 1 in 8 fails, 1 in 8 dies, the rest succeed.
    const fate = (c: ClaimJson) => createHash('sha256').update(`${c.event.id}:${c.delivery_count}`).digest()[0]! % 8;
    const worker = async (n: number) => {
      const base = bases[n % bases.length]!;
      while (!stop) {
        const r = await claim(base, a, { max: 10, lease_seconds: 5, max_deliveries: 3, wait: 1 });
        assert.equal(r.status, 200, r.text);
        for (const c of r.json.claims as ClaimJson[]) {
          counts.deliveries++;
          const f = fate(c);
          if (f === 0) {
            counts.failed_nacked++;
            const nack = await api(base, 'POST', `/api/v1/addresses/${a.id}/claims/${c.lease_id}/nack`, { token: a.token, json: { reason: 'handler failed' } });
            assert.equal(nack.status, 200, nack.text);
          } else if (f === 1) {
            counts.died_abandoned++; // the worker "crashed": its lease runs out and the event is redelivered
          } else {
            handled.set(c.event.id, (handled.get(c.event.id) ?? 0) + 1);
            counts.succeeded++;
            const ack = await api(base, 'POST', `/api/v1/addresses/${a.id}/claims/${c.lease_id}/ack`, { token: a.token });
            if (ack.status === 409) counts.lease_lost++;
            else {
              assert.equal(ack.status, 200, ack.text);
              acks.set(c.event.id, (acks.get(c.event.id) ?? 0) + 1);
            }
          }
        }
      }
    };
    const settledCount = async () => {
      let after = 0;
      let settled = 0;
      let dead = 0;
      const events: { id: string; acknowledged_at?: string; dead_at?: string }[] = [];
      for (;;) {
        const page = await listEvents(svc.baseUrl, a, { after, limit: 100 });
        events.push(...page.json.events);
        after = page.json.next_cursor;
        if (!page.json.has_more) break;
      }
      for (const e of events) {
        if (e.acknowledged_at !== undefined || e.dead_at !== undefined) settled++;
        if (e.dead_at !== undefined) dead++;
      }
      return { settled, dead, events };
    };
    const workers = range(1, 8).map(worker);
    const deadline = Date.now() + 90_000;
    let state = await settledCount();
    // Dead events whose final lease ran out die at the next claim; the workers keep claiming until then.
    while (state.settled < 1000 && Date.now() < deadline) {
      await sleep(500);
      state = await settledCount();
    }
    stop = true;
    await Promise.all(workers);
    state = await settledCount();
    assert.equal(state.events.length, 1000);
    const acked = state.events.filter((e) => e.acknowledged_at !== undefined);
    const dead = state.events.filter((e) => e.dead_at !== undefined);
    assert.equal(acked.length + dead.length, 1000, 'none lost: every event is acknowledged or dead');
    assert.deepEqual(
      acked.filter((e) => e.dead_at !== undefined),
      [],
      'no event is both',
    );
    for (const e of acked) {
      assert.equal(handled.get(e.id), 1, `event ${e.id} handled once`);
      assert.equal(acks.get(e.id), 1, `event ${e.id} acked once`);
    }
    for (const e of dead) assert.equal(acks.get(e.id), undefined, 'a dead event was never acked');
    assert.equal(counts.lease_lost, 0);
    assert.ok(dead.length > 0 && dead.length < 60, `about 1000/64 die (three failures in a row): ${dead.length}`);
    const line =
      `8 workers (${STORE}${second ? ', 2 instances' : ''}), 1000 events: acked exactly once ${acked.length}, dead ${dead.length}; ` +
      `deliveries ${counts.deliveries}, handler successes ${counts.succeeded}, failed (nacked) ${counts.failed_nacked}, died (lease abandoned) ${counts.died_abandoned}`;
    t.diagnostic(line);
    console.log(line);
  });
});
