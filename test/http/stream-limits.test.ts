// Event streams are bounded (design.md, "Bounded work"), so streams cannot hold unbounded memory: at most MAX_STREAMS_PER_ADDRESS per address
// and MAX_STREAMS_PER_CLIENT per client (429 too_many_streams with Retry-After); each page of frames
// is rendered once and shared by every stream of the address, so streams that do not read hold
// references, not copies; and a frame carries the very bytes GET returns for the event.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Addr, api, createAddress, listEvents, STORE, sleep, startTestService, type TestService } from '../helpers.js';
import { openStream, type SseStream } from '../sse-client.js';

const streamUrl = (svc: TestService, a: Addr) => `${svc.baseUrl}/api/v1/addresses/${a.id}/events/stream`;
const auth = (a: Addr) => ({ authorization: `Bearer ${a.token}` });

describe(`event stream caps (${STORE})`, () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ MAX_STREAMS_PER_ADDRESS: '3', MAX_STREAMS_PER_CLIENT: '5' });
  });
  after(() => svc.stop());

  it('one stream past MAX_STREAMS_PER_ADDRESS is 429 too_many_streams with Retry-After; closing one makes room', async () => {
    const a = await createAddress(svc.baseUrl);
    const open: SseStream[] = [];
    for (let i = 0; i < 3; i++) {
      const s = await openStream(streamUrl(svc, a), auth(a));
      assert.equal(s.status, 200);
      open.push(s);
    }
    const refused = await api(svc.baseUrl, 'GET', streamUrl(svc, a), { token: a.token });
    assert.equal(refused.status, 429, refused.text);
    assert.equal(refused.json.error.code, 'too_many_streams');
    assert.match(refused.json.error.message, /MAX_STREAMS_PER_ADDRESS/);
    assert.ok(Number(refused.headers.get('retry-after')) > 0);
    open.pop()!.close();
    let again: SseStream | undefined;
    for (let i = 0; i < 50 && again?.status !== 200; i++) {
      again?.close();
      await sleep(20);
      again = await openStream(streamUrl(svc, a), auth(a));
    }
    assert.equal(again?.status, 200, 'a closed stream frees its place');
    for (const s of [...open, again!]) s.close();
  });

  it('one stream past MAX_STREAMS_PER_CLIENT, over several addresses, is 429', async () => {
    await sleep(100);
    const addrs = await Promise.all([1, 2, 3].map(() => createAddress(svc.baseUrl)));
    const open: SseStream[] = [];
    for (const a of addrs) for (let i = 0; i < 2 && open.length < 5; i++) open.push(await openStream(streamUrl(svc, a), auth(a)));
    assert.deepEqual(
      open.map((s) => s.status),
      [200, 200, 200, 200, 200],
    );
    const refused = await api(svc.baseUrl, 'GET', streamUrl(svc, addrs[2]!), { token: addrs[2]!.token });
    assert.equal(refused.status, 429);
    assert.match(refused.json.error.message, /MAX_STREAMS_PER_CLIENT/);
    for (const s of open) s.close();
  });
});

describe(`event stream frames (${STORE})`, () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ MAX_STREAMS_PER_ADDRESS: '1000', MAX_STREAMS_PER_CLIENT: '1000' });
  });
  after(() => svc.stop());

  it('a frame carries the same data bytes as GET: big integers and a pretty-printed captured body', async () => {
    const a = await createAddress(svc.baseUrl);
    const body = '{\n  "id": 123456789012345678901234567890,\n  "f": 1.10,\n  "s": "x"\n}';
    const r = await fetch(`${svc.baseUrl}/api/v1/hooks/${a.id}/${a.secret}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    assert.equal(r.status, 202);
    const page = await listEvents(svc.baseUrl, a);
    const inPage = page.text.slice('{"events":['.length, page.text.lastIndexOf('],"next_cursor"'));
    assert.match(inPage, /"id": 123456789012345678901234567890,/, 'GET keeps every digit the sender wrote');
    const s = await openStream(streamUrl(svc, a), auth(a));
    const [m] = await s.waitForMessages(1);
    s.close();
    assert.equal(m!.data, inPage, 'the stream frame is byte for byte the event GET returns');
  });
});
