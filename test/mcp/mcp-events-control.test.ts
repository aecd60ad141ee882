// The Events extension's non-event webhook bodies and secret rotation (the working group's draft,
// "Non-event webhook bodies", "Secret rotation"; design.md, "MCP, current revision"), black box
// with real local receivers that verify every Standard Webhooks signature, on each store:
// - `gap` {"type":"gap","cursor"} before delivery resumes past skipped events: retention pruned
//   them before delivery, a 413 gave one up, the store was restored (a new store epoch);
// - `terminated` when the address (the principal) is deleted, and none on unsubscribe; a REST
//   subscription of the same address gets plain Events only;
// - a refresh with a new secret: both signatures (space-separated) during PUSH_ROTATION_GRACE_MS,
//   then the new one alone (the window is a setting: the service restarts with a 1 ms one).
// Control bodies are signed and headed like occurrences: X-MCP-Subscription-Id, webhook-id
// msg_<type>_<hex>. A liveness probe runs beside; the attack case is a receiver that never answers
// a terminated body: the service keeps serving, and its shutdown cuts that connection at once.
import assert from 'node:assert/strict';
import { copyFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { SQLITE_FILE } from '../../src/storage/open-store.js';
import { newPostgresEpoch, restoreSqlite } from '../../src/storage/restore.js';
import { type Addr, api, createAddress, STORE, startTestService, type TestService } from '../helpers.js';
import { type LivenessProbe, startLivenessProbe } from '../liveness-probe.js';
import { startReceiver, until, verify } from '../push/receiver.js';
import { assertControl, delivered, type Hook, isControl, NAME, occurrences, parsed, SECRET, send, startHook, subscribeOn } from './mcp-hook.js';
import { result } from './mcp-modern-client.js';

const SECRET2 = `whsec_${Buffer.alloc(32, 4).toString('base64')}`;
const ENV = {
  PUSH_ALLOW_PRIVATE: 'true',
  PUSH_RETRY_SCHEDULE_MS: '0,100,200,300,500,1000,1000,1000,1000,1000,1000,1000,1000,1000,1000,1000,1000,1000,1000,1000',
  PUSH_TIMEOUT_MS: '5000',
  PUSH_SWEEP_MS: '200',
};

describe(`MCP webhook control bodies and secret rotation (${STORE})`, () => {
  let svc: TestService;
  let probe: LivenessProbe;
  const hooks: Hook[] = [];
  before(async () => {
    svc = await startTestService({ ...ENV, MAX_EVENTS_PER_ADDRESS: '3' });
    probe = startLivenessProbe(svc.baseUrl);
  });
  after(async () => {
    for (const h of hooks) await h.close();
    assert.deepEqual((await probe.stop()).failures, []);
    await svc.stop();
  });
  const hook = async (secrets: () => string[], status?: (o: any) => number) => {
    const h = await startHook(secrets, status);
    hooks.push(h);
    return h;
  };
  const subscribe = (a: Addr, url: string) => subscribeOn(svc, a, url, SECRET);

  it('events pruned before delivery: a gap with the last pruned position comes first, then the events kept, in order', async () => {
    const a = await createAddress(svc.baseUrl);
    // Event 1 is refused until retention prunes it; the rest are taken.
    const rx = await hook(
      () => [SECRET],
      (o) => (o.data.data.i === 1 ? 503 : 200),
    );
    const sub = await subscribe(a, rx.url);
    for (let i = 1; i <= 3; i++) {
      const e = await send(svc.baseUrl, a, i);
      assert.equal((await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/events/${e.id}/ack`, { token: a.token })).status, 200);
    }
    await until(() => occurrences(rx).length >= 1, 20_000, 'event 1 tried (and refused)');
    await send(svc.baseUrl, a, 4); // the queue is full: acknowledged event 1 is pruned before it was delivered
    await until(() => delivered(rx).length >= 3, 30_000, 'events 2, 3, 4 delivered');
    const gaps = rx.posts.filter((p) => isControl(p, 'gap'));
    assert.ok(gaps.length >= 1, 'a gap');
    assert.ok(
      gaps.every((p) => p.body === gaps[0]!.body && p.headers['webhook-id'] === gaps[0]!.headers['webhook-id']),
      'one gap (sent again only if a runner was cut off), the same webhook-id',
    );
    assert.deepEqual(assertControl(gaps[0]!, 'gap', SECRET, sub.id), { type: 'gap', cursor: '1' }, 'exactly the draft body: the fresh cursor');
    const at = rx.posts.indexOf(gaps.at(-1)!);
    assert.deepEqual(
      delivered(rx).map((p) => parsed(p).data.data.i),
      [2, 3, 4],
    );
    assert.ok(rx.posts.indexOf(delivered(rx)[0]!) > at, 'the gap comes before the first event after it');
    assert.ok(
      rx.posts.slice(at + 1).every((p) => parsed(p).type === undefined && parsed(p).data.sequence >= 2),
      'nothing at or before the gap is sent after it',
    );
    const again = await subscribe(a, rx.url);
    assert.equal(again.cursor, '4', 'the refresh reports the watermark past the gap');
  });

  it('a 413 gives the event up and says so with a gap at its position; the next event follows', async () => {
    const a = await createAddress(svc.baseUrl);
    const rx = await hook(
      () => [SECRET],
      (o) => (o.data.data.i === 1 ? 413 : 200),
    );
    const sub = await subscribe(a, rx.url);
    const e1 = await send(svc.baseUrl, a, 1);
    await send(svc.baseUrl, a, 2);
    await until(() => delivered(rx).length >= 1, 20_000, 'event 2 delivered');
    // The last two POSTs are the gap at event 1's position and event 2; before them only event 1
    // (answered 413) and, should a runner be cut off and its successor send it again, that same gap.
    const kinds = rx.posts.map((p) => parsed(p).type ?? `event ${parsed(p).data.data.i}`);
    assert.deepEqual(kinds.slice(-2), ['gap', 'event 2'], kinds.join());
    assert.equal(kinds[0], 'event 1');
    assert.ok(
      kinds.slice(0, -1).every((k) => k === 'event 1' || k === 'gap'),
      kinds.join(),
    );
    const gap = rx.posts.at(-2)!;
    assert.deepEqual(assertControl(gap, 'gap', SECRET, sub.id), { type: 'gap', cursor: String(e1.sequence) });
    assert.ok(
      rx.posts.filter((p) => isControl(p, 'gap')).every((p) => p.headers['webhook-id'] === gap.headers['webhook-id']),
      'a gap sent again carries the same webhook-id',
    );
    assert.ok(
      occurrences(rx).every((p) => parsed(p).data.data.i === 2 || p.status === 413),
      'event 1 was answered 413 each time it came',
    );
  });

  it('the address deleted: a terminated body; an unsubscribed key gets none, nor does a REST subscription (plain Events only)', async () => {
    const a = await createAddress(svc.baseUrl);
    const b = await createAddress(svc.baseUrl);
    const left = await hook(() => [SECRET]);
    const rx = await hook(() => [SECRET]);
    const rest = await startReceiver();
    try {
      const created = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${b.id}/subscriptions`, { token: b.token, json: { url: rest.url } });
      assert.equal(created.status, 201, created.text);
      await subscribe(a, left.url);
      const sub = await subscribe(b, rx.url);
      await send(svc.baseUrl, a, 1);
      await send(svc.baseUrl, b, 1);
      await until(() => delivered(left).length >= 1 && delivered(rx).length >= 1 && rest.received.length >= 1, 20_000, 'one event each');
      const gone = await result(a.mcpUrl, a.token, 'events/unsubscribe', { name: NAME, arguments: {}, delivery: { url: left.url } });
      assert.equal(gone.resultType, 'complete');
      assert.equal((await api(svc.baseUrl, 'DELETE', `/api/v1/addresses/${b.id}`, { token: b.token })).status, 204);
      await until(() => rx.posts.some((p) => isControl(p, 'terminated')), 20_000, 'terminated');
      const ended = rx.posts.filter((p) => isControl(p, 'terminated'));
      assert.equal(ended.length, 1);
      const body = assertControl(ended[0]!, 'terminated', SECRET, sub.id);
      assert.equal(body.error.code, -32012);
      assert.deepEqual(body.error.data, { reason: 'address_gone' });
      assert.match(body.error.message, /deleted or expired/);
      assert.deepEqual(
        left.posts.map((p) => parsed(p).type ?? 'event'),
        ['event'],
        'unsubscribing is the client ending it: no terminated',
      );
      assert.ok(
        rest.received.every((d) => d.event.type !== 'terminated' && d.event.type !== 'gap' && typeof d.event.id === 'string'),
        'the REST subscription got Events only',
      );
    } finally {
      await rest.close();
    }
  });
});

describe(`MCP webhook secret rotation and a restored store (${STORE})`, () => {
  it('a refresh with a new secret: both signatures in the window, then the new one alone; after a restore a gap at the position comes first', async () => {
    let svc = await startTestService(ENV);
    let secrets = [SECRET];
    const rx = await startHook(() => secrets);
    try {
      const a = await createAddress(svc.baseUrl);
      const sub = await subscribeOn(svc, a, rx.url, SECRET);
      await send(svc.baseUrl, a, 1);
      await until(() => delivered(rx).length >= 1, 20_000, 'event 1');
      assert.equal(String(delivered(rx)[0]!.headers['webhook-signature']).split(' ').length, 1, 'one secret, one signature');

      // The refresh brings SECRET2; a receiver that knows either verifies the next delivery.
      await subscribeOn(svc, a, rx.url, SECRET2);
      secrets = [SECRET];
      await send(svc.baseUrl, a, 2);
      await until(() => delivered(rx).length >= 2, 20_000, 'event 2 verified with the old secret');
      const two = delivered(rx)[1]!;
      assert.equal(String(two.headers['webhook-signature']).split(' ').length, 2, 'two signatures, space-separated');
      verify(two, SECRET);
      verify(two, SECRET2);
      // The same secret again keeps the rotation under way.
      await subscribeOn(svc, a, rx.url, SECRET2);
      await send(svc.baseUrl, a, 3);
      await until(() => delivered(rx).length >= 3, 20_000, 'event 3');
      verify(delivered(rx)[2]!, SECRET);
      await positionIs(svc, a, sub.id, 3); // else the stop may cut the answer off and event 3 comes again

      // Restarted with a 1 ms window (long over): the new secret alone.
      await svc.stop({ keepStorage: true });
      svc = await startTestService({ ...ENV, PUSH_ROTATION_GRACE_MS: '1' }, svc.storage);
      secrets = [SECRET, SECRET2];
      const moved = { ...a, inboxUrl: a.inboxUrl.replace(/^http:\/\/[^/]+/, svc.baseUrl), mcpUrl: a.mcpUrl.replace(/^http:\/\/[^/]+/, svc.baseUrl) };
      await send(svc.baseUrl, moved, 4);
      await until(() => delivered(rx).length >= 4, 20_000, 'event 4');
      const four = delivered(rx)[3]!;
      assert.equal(String(four.headers['webhook-signature']).split(' ').length, 1, 'the window is over: one signature');
      verify(four, SECRET2);
      assert.throws(() => verify(four, SECRET), 'the replaced secret no longer signs');
      await positionIs(svc, moved, sub.id, 4);
      assert.deepEqual(
        rx.posts.map((p) => parsed(p).type ?? 'event'),
        ['event', 'event', 'event', 'event'],
        'a restart of the same store is no gap',
      );

      // A restore (a new store epoch, as `return-address restore` makes): the receiver is told with a gap at the position.
      await svc.stop({ keepStorage: true });
      if (STORE === 'sqlite') {
        const backup = join(svc.storage.dataDir, 'backup.sqlite');
        copyFileSync(join(svc.storage.dataDir, SQLITE_FILE), backup);
        restoreSqlite(svc.storage.dataDir, backup);
      } else {
        await newPostgresEpoch(loadConfig({ ...svc.storage.env, BASE_URL: 'http://127.0.0.1:1' }));
      }
      svc = await startTestService({ ...ENV, PUSH_ROTATION_GRACE_MS: '1' }, svc.storage);
      secrets = [SECRET2];
      const later = { ...moved, inboxUrl: moved.inboxUrl.replace(/^http:\/\/[^/]+/, svc.baseUrl) };
      await send(svc.baseUrl, later, 5);
      await until(() => delivered(rx).length >= 5, 20_000, 'event 5');
      const tail = rx.posts.slice(4);
      assert.deepEqual(
        tail.map((p) => parsed(p).type ?? 'event'),
        ['gap', 'event'],
      );
      assert.deepEqual(assertControl(tail[0]!, 'gap', SECRET2, sub.id), { type: 'gap', cursor: '4' }, 'delivery resumes after the restored position');
      assert.equal(parsed(tail[1]!).data.data.i, 5);
    } finally {
      await rx.close();
      await svc.stop();
    }
  });
});

async function positionIs(svc: TestService, a: Addr, id: string, cursor: number): Promise<void> {
  const shown = async () => (await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/subscriptions/${id}`, { token: a.token })).json.cursor;
  await until(async () => (await shown()) === cursor, 20_000, `position ${cursor} stored`);
}

describe(`MCP webhook control bodies against a receiver that never answers (${STORE})`, () => {
  it('a terminated body left hanging does not hold the shutdown: the connection is cut when the service stops', async () => {
    const svc = await startTestService({ ...ENV, PUSH_TIMEOUT_MS: '120000' });
    const probe = startLivenessProbe(svc.baseUrl);
    let hanging: http.IncomingMessage | undefined;
    let closed = false;
    let events = 0;
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const o = JSON.parse(Buffer.concat(chunks).toString());
        if (o.type === 'verification') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ challenge: o.challenge }));
        if (o.type !== 'terminated') {
          events++;
          return res.writeHead(200).end('');
        }
        hanging = req; // never answered
        req.socket.on('close', () => {
          closed = true;
        });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    let stopped = false;
    try {
      const a = await createAddress(svc.baseUrl);
      await subscribeOn(svc, a, `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, SECRET);
      await send(svc.baseUrl, a, 1);
      await until(() => events === 1, 20_000, 'the subscription is being delivered');
      assert.equal((await api(svc.baseUrl, 'DELETE', `/api/v1/addresses/${a.id}`, { token: a.token })).status, 204);
      await until(() => hanging !== undefined, 20_000, 'the terminated body arrived');
      const b = await createAddress(svc.baseUrl); // the service still serves while it hangs
      assert.equal(b.id.length > 0, true);
      assert.deepEqual((await probe.stop()).failures, []);
      await svc.stop();
      stopped = true;
      await until(() => closed, 10_000, 'the hanging connection cut by the shutdown, not left to PUSH_TIMEOUT_MS');
    } finally {
      if (!stopped) {
        await probe.stop();
        await svc.stop();
      }
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
