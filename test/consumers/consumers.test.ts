// Named consumers over real sockets (design.md, "Reading without loss"): a position moves only when the reader asks
// for the page after it; it survives a restart; it can be sought back, listed and deleted; a stream
// starts from it; 150 new names at once leave exactly the cap; and on PostgreSQL two instances
// share one position.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MAX_CONSUMERS_PER_ADDRESS } from '../../src/consumers/consumers.js';
import { type Addr, api, createAddress, deliver, onlyPostgres, range, STORE, startTestService, type TestService } from '../helpers.js';
import { sendPipelined } from '../pipelined-http.js';
import { openStream } from '../sse-client.js';

const seqs = (r: { json: { events: { sequence: number }[] } }) => r.json.events.map((e) => e.sequence);

function read(svc: TestService, a: Addr, query: Record<string, string | number>) {
  return api(
    svc.baseUrl,
    'GET',
    `/api/v1/addresses/${a.id}/events?${new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]))}`,
    { token: a.token },
  );
}
const consumers = async (svc: TestService, a: Addr) => {
  const r = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/consumers`, { token: a.token });
  assert.equal(r.status, 200, r.text);
  return (r.json.consumers as { name: string; cursor: number; updated_at: string }[]).map((c) => [c.name, c.cursor]);
};

describe(`named consumers (${STORE})`, () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(async () => {
    await svc.stop();
  });

  it('a read without after starts at the stored position; after=N stores N first; seek back; list; delete', async () => {
    const a = await createAddress(svc.baseUrl);
    for (const i of range(1, 8)) await deliver(svc.baseUrl, a, { type: `t${i}` });
    // New name: from 0, stored at 0 and listed.
    assert.deepEqual(seqs(await read(svc, a, { consumer: 'worker-1', limit: 3 })), [1, 2, 3]);
    assert.deepEqual(await consumers(svc, a), [['worker-1', 0]]);
    // Reading again without confirming gives the same page (at-least-once).
    assert.deepEqual(seqs(await read(svc, a, { consumer: 'worker-1', limit: 3 })), [1, 2, 3]);
    // Asking for the next page confirms the previous one.
    const next = await read(svc, a, { consumer: 'worker-1', limit: 3, after: 3 });
    assert.deepEqual(seqs(next), [4, 5, 6]);
    assert.deepEqual(await consumers(svc, a), [['worker-1', 3]]);
    assert.deepEqual(seqs(await read(svc, a, { consumer: 'worker-1', limit: 3 })), [4, 5, 6], 'resumes after the confirmed position');
    // Seek back to replay.
    assert.deepEqual(seqs(await read(svc, a, { consumer: 'worker-1', limit: 2, after: 1 })), [2, 3]);
    assert.deepEqual(await consumers(svc, a), [['worker-1', 1]]);
    // Consumers are independent: another name, and acks, do not move it.
    assert.deepEqual(seqs(await read(svc, a, { consumer: 'audit:all', after: 8 })), []);
    const ack = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/events/${next.json.events[0].id}/ack`, { token: a.token });
    assert.equal(ack.status, 200);
    assert.deepEqual(await consumers(svc, a), [
      ['audit:all', 8],
      ['worker-1', 1],
    ]);
    const listed = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/consumers`, { token: a.token });
    assert.ok(!Number.isNaN(Date.parse(listed.json.consumers[0].updated_at)));
    // Delete: forgotten, so the name starts at 0 again; deleting again is 404.
    const del = await api(svc.baseUrl, 'DELETE', `/api/v1/addresses/${a.id}/consumers/worker-1`, { token: a.token });
    assert.equal(del.status, 204);
    assert.deepEqual(await consumers(svc, a), [['audit:all', 8]]);
    assert.equal((await api(svc.baseUrl, 'DELETE', `/api/v1/addresses/${a.id}/consumers/worker-1`, { token: a.token })).json.error.code, 'not_found');
    assert.equal((await api(svc.baseUrl, 'DELETE', `/api/v1/addresses/${a.id}/consumers/Bad%20Name`, { token: a.token })).status, 400);
    assert.deepEqual(seqs(await read(svc, a, { consumer: 'worker-1', limit: 1 })), [1]);
    // Credentials first, as everywhere.
    assert.equal((await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/consumers`)).status, 401);
  });

  it('with a filter, after=next_cursor confirms the examined events too, and a consumer long-poll waits from its position', async () => {
    const a = await createAddress(svc.baseUrl);
    for (const i of range(1, 6)) await deliver(svc.baseUrl, a, { type: i === 2 ? 'wanted' : 'other' });
    const first = await read(svc, a, { consumer: 'f', type: 'wanted' });
    assert.deepEqual([seqs(first), first.json.next_cursor], [[2], 6]);
    const waiting = read(svc, a, { consumer: 'f', type: 'wanted', after: first.json.next_cursor, wait: 10 });
    await new Promise((r) => setTimeout(r, 200));
    await deliver(svc.baseUrl, a, { type: 'other' });
    const hit = await deliver(svc.baseUrl, a, { type: 'wanted' });
    const r = await waiting;
    assert.deepEqual(seqs(r), [hit.json.event.sequence]);
    assert.deepEqual(await consumers(svc, a), [['f', 6]]);
  });

  it('a stream for a consumer starts at its position, or at Last-Event-ID, which it stores first', async () => {
    const a = await createAddress(svc.baseUrl);
    for (const i of range(1, 5)) await deliver(svc.baseUrl, a, { type: `t${i}` });
    await read(svc, a, { consumer: 'live', after: 2 });
    const url = `${svc.baseUrl}/api/v1/addresses/${a.id}/events/stream?consumer=live`;
    const auth = { authorization: `Bearer ${a.token}` };
    const s1 = await openStream(url, auth);
    await s1.waitForMessages(3);
    s1.close();
    assert.deepEqual(
      s1.events().map((e) => e.sequence),
      [3, 4, 5],
    );
    assert.deepEqual(await consumers(svc, a), [['live', 2]], 'a stream does not move the position by itself');
    const s2 = await openStream(url, { ...auth, 'last-event-id': '4' });
    await s2.waitForMessages(1);
    s2.close();
    assert.deepEqual(
      s2.events().map((e) => e.sequence),
      [5],
    );
    assert.deepEqual(await consumers(svc, a), [['live', 4]], 'reconnecting with Last-Event-ID confirmed 4');
  });

  it(`150 new names at once: exactly ${MAX_CONSUMERS_PER_ADDRESS} are stored, the rest get 409 too_many_consumers; existing ones still move`, async () => {
    const a = await createAddress(svc.baseUrl);
    await deliver(svc.baseUrl, a, {});
    const answers = await Promise.all(range(1, 150).map((i) => read(svc, a, { consumer: `c${i}`, after: i })));
    const ok = answers.filter((r) => r.status === 200).length;
    const refused = answers.filter((r) => r.status === 409);
    assert.equal(ok, MAX_CONSUMERS_PER_ADDRESS);
    assert.equal(refused.length, 150 - MAX_CONSUMERS_PER_ADDRESS);
    assert.equal(refused[0]!.json.error.code, 'too_many_consumers');
    assert.match(refused[0]!.json.error.message, /DELETE/);
    const list = await consumers(svc, a);
    assert.equal(list.length, MAX_CONSUMERS_PER_ADDRESS);
    const [name] = list[0]!;
    assert.equal((await read(svc, a, { consumer: name as string, after: 0 })).status, 200, 'an existing consumer moves at the cap');
  });

  it('names of dots only are refused everywhere; a raw DELETE ending in a slash or holding a dot segment never deletes the address', async () => {
    const a = await createAddress(svc.baseUrl);
    assert.equal((await deliver(svc.baseUrl, a, { type: 'keep' })).status, 202);
    for (const name of ['.', '..', '...']) {
      const r = await read(svc, a, { consumer: name });
      assert.equal(r.status, 400, name);
      assert.equal(r.json.error.code, 'invalid_request');
      assert.match(r.json.error.message, /consumer.*only dots/);
    }
    assert.equal((await read(svc, a, { consumer: '.a.' })).status, 200, 'dots beside a letter are a name');
    // curl and fetch resolve dot segments before sending, so these are written on a raw socket, as
    // sent by a client that does not (and as curl sends `…/consumers/..` after resolving it).
    const bearer = { authorization: `Bearer ${a.token}` };
    const paths = [
      `/api/v1/addresses/${a.id}/`,
      `/api/v1/addresses/${a.id}//`,
      `/api/v1/addresses/${a.id}/consumers/..`,
      `/api/v1/addresses/${a.id}/consumers/%2E%2E`,
      `/api/v1/addresses/${a.id}/consumers/%2e`,
      `/api/v1/addresses/${a.id}/consumers/.`,
      `/api/v1/addresses/${a.id}/consumers/.a./`,
      `/api/v1/addresses/${a.id}/consumers/../..`,
      `/api/v1/addresses/${a.id}/.`,
      `/api/v1/addresses/${a.id}/%2E%2E/${a.id}`,
    ];
    const port = Number(new URL(svc.baseUrl).port);
    // One connection each: an error answer may close its connection.
    const answers = (await Promise.all(paths.map((path) => sendPipelined(port, [{ method: 'DELETE', path, headers: bearer }])))).map((r) => r[0]!);
    assert.equal(answers.length, paths.length);
    answers.forEach((r, i) => {
      assert.equal(r.status, 400, paths[i]);
      assert.equal(r.json.error.code, 'invalid_request', paths[i]);
      assert.match(r.json.error.message, /DELETE path may not end in '\/' nor hold a '\.' or '\.\.' segment/, paths[i]);
    });
    const still = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events`, { token: a.token });
    assert.equal(still.status, 200, 'the address still exists');
    assert.equal(still.json.events.length, 1, `with its event: ${still.text}`);
    // The exact paths still work: a consumer named '.a.' is deleted, then the address.
    const gone = await api(svc.baseUrl, 'DELETE', `/api/v1/addresses/${a.id}/consumers/.a.`, { token: a.token });
    assert.equal(gone.status, 204);
    assert.equal((await api(svc.baseUrl, 'DELETE', `/api/v1/addresses/${a.id}`, { token: a.token })).status, 204);
  });

  it('parallel seeks of one consumer leave one of the positions asked, never another', async () => {
    const a = await createAddress(svc.baseUrl);
    await Promise.all(range(1, 40).map((i) => read(svc, a, { consumer: 'race', after: i * 10 })));
    const [[, cursor]] = (await consumers(svc, a)) as [[string, number]];
    assert.ok(cursor % 10 === 0 && cursor >= 10 && cursor <= 400, `position ${cursor}`);
  });

  it('a position is durable: it survives a restart of the service', async () => {
    const a = await createAddress(svc.baseUrl);
    for (const i of range(1, 3)) await deliver(svc.baseUrl, a, { type: `t${i}` });
    assert.equal((await read(svc, a, { consumer: 'durable', after: 2 })).status, 200);
    const storage = svc.storage;
    await svc.stop({ keepStorage: true });
    svc = await startTestService({}, storage);
    const b = { ...a, id: a.id };
    assert.deepEqual(seqs(await read(svc, b, { consumer: 'durable' })), [3]);
    // Deleting the address deletes its consumers.
    assert.equal((await api(svc.baseUrl, 'DELETE', `/api/v1/addresses/${a.id}`, { token: a.token })).status, 204);
    assert.equal((await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/consumers`, { token: a.token })).status, 404);
  });
});

describe('a consumer across two PostgreSQL instances', { skip: onlyPostgres }, () => {
  let a: TestService;
  let b: TestService;
  before(async () => {
    a = await startTestService();
    b = await startTestService({}, a.storage);
  });
  after(async () => {
    await b?.stop();
    await a?.stop();
  });

  it('has one position: confirmed through one instance, resumed through the other', async () => {
    const addr = await createAddress(a.baseUrl);
    for (const i of range(1, 6)) await deliver(a.baseUrl, addr, { type: `t${i}` });
    assert.deepEqual(seqs(await read(a, addr, { consumer: 'shared', limit: 2 })), [1, 2]);
    assert.deepEqual(seqs(await read(b, addr, { consumer: 'shared', limit: 2, after: 2 })), [3, 4]);
    assert.deepEqual(seqs(await read(a, addr, { consumer: 'shared', limit: 2 })), [3, 4]);
    assert.deepEqual(seqs(await read(a, addr, { consumer: 'shared', limit: 2, after: 4 })), [5, 6]);
    assert.deepEqual(await consumers(b, addr), [['shared', 4]]);
    // 60 names created through both instances at once: the cap holds across instances.
    const answers = await Promise.all(range(1, 120).map((i) => read(i % 2 ? a : b, addr, { consumer: `n${i}` })));
    assert.equal(answers.filter((r) => r.status === 200).length, MAX_CONSUMERS_PER_ADDRESS - 1);
    assert.equal((await consumers(a, addr)).length, MAX_CONSUMERS_PER_ADDRESS);
  });
});
