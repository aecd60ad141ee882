// The TypeScript client against the real service on a real socket; the "network" in the resume
// test is a real TCP proxy whose connections the test cuts and whose port it closes for a while.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { type Event, ReturnAddress, ReturnAddressError } from '@return-address/client';
import { freePort, sleep, startTestService, type TestService } from '../helpers.js';

/** A TCP forwarder that can drop every open connection and refuse new ones for a while. */
async function startProxy(target: number) {
  const port = await freePort();
  const sockets = new Set<net.Socket>();
  let server: net.Server;
  const listen = () =>
    new Promise<void>((resolve) => {
      server = net.createServer((client) => {
        const upstream = net.connect(target, '127.0.0.1');
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on('close', () => sockets.delete(s));
          s.on('error', () => {});
        }
        client.pipe(upstream).pipe(client);
      });
      server.listen(port, '127.0.0.1', () => resolve());
    });
  await listen();
  let drops = 0;
  return {
    url: `http://127.0.0.1:${port}`,
    get drops() {
      return drops;
    },
    cut() {
      for (const s of sockets) s.destroy();
      drops++;
    },
    /** Closes the port (connections are refused) for `ms`, cutting what is open. */
    async outage(ms: number) {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        this.cut();
      });
      await sleep(ms);
      await listen();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

describe('TypeScript client', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(async () => {
    await svc.stop();
  });

  it('create, get, deliver, events, waitFor, ack and delete round-trip with the route shapes', async () => {
    const ra = await ReturnAddress.create({ url: svc.baseUrl, name: 'client', taskId: 't-1', ttl: 3600 });
    assert.match(ra.id, /^addr_/);
    assert.equal(ra.created!.address.name, 'client');
    const addr = await ra.get();
    assert.deepEqual(addr, ra.created!.address);
    const d1 = await ra.deliver({ type: 'a', data: { n: 1 } }, { idempotencyKey: 'k1' });
    assert.equal(d1.duplicate, false);
    assert.equal((await ra.deliver({ type: 'a', data: { n: 1 } }, { idempotencyKey: 'k1' })).duplicate, true);
    await ra.deliver({ type: 'b', data: { n: 2 } });
    const seen: Event[] = [];
    for await (const e of ra.events({ limit: 1 })) seen.push(e);
    assert.deepEqual(
      seen.map((e) => [e.sequence, e.type]),
      [
        [1, 'a'],
        [2, 'b'],
      ],
    );
    const w = await ra.waitFor({ type: 'b', timeout: 5 });
    assert.deepEqual([w.event?.sequence, w.cursor, ra.cursor], [2, 2, 2]);
    const acked = await ra.ack(w.event!.id);
    assert.ok(acked.acknowledged_at);
    const none = await ra.waitFor({ timeout: 0 });
    assert.deepEqual(none, { event: null, cursor: 2 });
    await ra.delete();
    await assert.rejects(ra.get(), (err: unknown) => err instanceof ReturnAddressError && err.status === 404 && err.code === 'not_found');
  });

  it('waitFor with match passes over non-matching events and is woken by a later delivery', async () => {
    const ra = await ReturnAddress.create({ url: svc.baseUrl });
    await ra.deliver({ type: 'github.pull_request', data: { action: 'opened', pr: { number: 5 } } });
    const pending = ra.waitFor({ type: 'github.pull_request', match: { 'data.action': 'closed', 'data.pr.number': '5' }, timeout: 20 });
    await sleep(300);
    await ra.deliver({ type: 'github.pull_request', data: { action: 'closed', pr: { number: 6 } } });
    const wanted = (await ra.deliver({ type: 'github.pull_request', data: { action: 'closed', pr: { number: 5 } } })).event;
    const got = await pending;
    assert.deepEqual(got, { event: wanted, cursor: 3 });
    const timedOut = await ra.waitFor({ match: { 'data.action': 'reopened' }, timeout: 1 });
    assert.deepEqual(timedOut, { event: null, cursor: 3 }, 'a timeout reports how far it scanned');
  });

  it('errors are ReturnAddressError with the status and code of the API, or network_error with status 0', async () => {
    const ra = await ReturnAddress.create({ url: svc.baseUrl });
    const wrong = new ReturnAddress({ url: svc.baseUrl, id: ra.id, token: `aa_read_${'x'.repeat(43)}` });
    await assert.rejects(wrong.get(), (e: unknown) => e instanceof ReturnAddressError && e.status === 401 && e.code === 'unauthorized' && e.message.length > 0);
    await assert.rejects(ra.ack('evt_nope'), (e: unknown) => e instanceof ReturnAddressError && e.status === 404 && e.code === 'not_found');
    await assert.rejects(
      ReturnAddress.create({ url: svc.baseUrl, ttl: 1 }),
      (e: unknown) => e instanceof ReturnAddressError && e.status === 400 && e.code === 'invalid_request' && /expires_in_seconds/.test(e.message),
    );
    await assert.rejects(ra.deliver({ data: 'x', bogus: 1 } as never), (e: unknown) => e instanceof ReturnAddressError && e.status === 400);
    const deadPort = await freePort();
    const nowhere = new ReturnAddress({ url: `http://127.0.0.1:${deadPort}`, id: ra.id, token: ra.token });
    await assert.rejects(nowhere.get(), (e: unknown) => e instanceof ReturnAddressError && e.status === 0 && e.code === 'network_error');
    await assert.rejects(
      nowhere.waitFor({ timeout: 1 }),
      (e: unknown) => e instanceof ReturnAddressError && e.code === 'network_error',
      'a failure that lasts to the deadline is reported, not taken for a timeout',
    );
  });

  it('waitFor resumes after dropped connections and refused ports: every event exactly once, in order', async () => {
    const proxy = await startProxy(Number(new URL(svc.baseUrl).port));
    try {
      const created = await ReturnAddress.create({ url: svc.baseUrl });
      const direct = created; // deliveries go straight to the service; only the reader's network breaks
      const reader = ReturnAddress.fromCreated(created.created!, { url: proxy.url });
      const N = 40;
      const got: number[] = [];
      const consumer = (async () => {
        while (got.length < N) {
          const r = await reader.waitFor({ type: 'tick', timeout: 60 });
          assert.ok(r.event, 'no timeout within 60 s');
          got.push((r.event.data as { i: number }).i);
        }
      })();
      for (let i = 1; i <= N; i++) {
        await direct.deliver({ type: i % 5 === 0 ? 'noise' : 'tick', data: { i } });
        if (i % 5 === 0) await direct.deliver({ type: 'tick', data: { i: -i } }); // a tick after each noise event
        if (i % 7 === 0) proxy.cut(); // mid long-poll or mid response
        if (i % 13 === 0) await proxy.outage(400); // ECONNREFUSED for a while
        await sleep(i % 3 === 0 ? 30 : 0);
      }
      // 40 deliveries of which 8 are noise, plus 8 extra ticks: 40 ticks in all.
      await consumer;
      const expected: number[] = [];
      for (let i = 1; i <= N; i++) expected.push(...(i % 5 === 0 ? [-i] : [i]));
      assert.deepEqual(got, expected, 'no tick skipped, none repeated, in delivery order');
      assert.ok(proxy.drops >= 5, `the network was cut ${proxy.drops} times`);
    } finally {
      await proxy.close();
    }
  });

  it('a page that fails with 500 every time is retried a bounded number of times, not until the deadline (a broken deployment is not hammered)', async () => {
    const ra = await ReturnAddress.create({ url: svc.baseUrl });
    let pages = 0;
    // The service stands behind a fetch that breaks its page reads (a deployment whose reads fail
    // with 500 every time); everything else reaches the real service.
    const broken: typeof fetch = async (input, init) => {
      if (String(input).includes('/events') && (init?.method ?? 'GET') === 'GET') {
        pages++;
        return new Response(JSON.stringify({ error: { code: 'internal', message: 'Internal error.' } }), {
          status: 500,
          headers: { 'content-type': 'application/json' },
        });
      }
      return fetch(input, init);
    };
    const client = new ReturnAddress({ url: svc.baseUrl, id: ra.id, token: ra.token, fetch: broken });
    const t0 = Date.now();
    await assert.rejects(client.waitFor({ timeout: 120 }), (err: unknown) => err instanceof ReturnAddressError && err.status === 500);
    assert.equal(pages, 3, 'three attempts in all');
    assert.ok(Date.now() - t0 < 10_000, `gave up in ${Date.now() - t0} ms, well before the 120 s timeout`);
    pages = 0;
    await assert.rejects(
      async () => {
        for await (const _ of client.events()) {
          /* none */
        }
      },
      (err: unknown) => err instanceof ReturnAddressError && err.status === 500,
    );
    assert.equal(pages, 3);
    await ra.delete();
  });
});
