// The forwarder notices a restore (design.md, "Store epoch"): running across a real one
// (restore-helper.ts: on SQLite the backup comes back with the consumer's older position, and the
// next event gets a sequence the forwarder already passed), it says so in one notice, reads again
// from the start and sends the handler only what it had not sent: each event id once.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ReturnAddress } from '@return-address/client';
import { forward } from '../../src/forward/forwarder.js';
import { restorableService, restorer } from '../epoch/restore-helper.js';
import { createAddress, deliver, STORE } from '../helpers.js';
import { startLocalHandler } from './local-handler.js';

async function until(what: string, check: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe(`forward and a restore (${STORE})`, () => {
  const s = restorableService();

  it('a running forwarder reads again from the start on a new epoch and sends each event id once', async () => {
    const r = restorer(s.storage);
    const a = await createAddress(s.svc.baseUrl);
    const h = await startLocalHandler();
    const ra = ReturnAddress.fromCreated(a.body, { url: s.svc.baseUrl });
    const stop = new AbortController();
    const notices: string[] = [];
    const data = () => h.received.map((x) => JSON.parse(x.body.toString()).data);
    const done = forward(ra, {
      targets: [{ url: h.url }],
      signal: stop.signal,
      backoff: { initialMs: 50, maxMs: 200 },
      onNotice: (m) => notices.push(m),
    });
    try {
      for (let i = 1; i <= 2; i++) assert.equal((await deliver(s.svc.baseUrl, a, { data: i })).status, 202);
      await until('events 1 and 2 forwarded', () => h.received.length >= 2);
      await r.backup();
      assert.equal((await deliver(s.svc.baseUrl, a, { data: 3 })).status, 202);
      await until('event 3 forwarded', () => h.received.length >= 3);

      s.svc = await r.restore(s.svc);
      const fresh = await deliver(s.svc.baseUrl, a, { data: 'new' });
      assert.equal(fresh.status, 202);
      if (STORE === 'sqlite') assert.equal(fresh.json.event.sequence, 3, 'a sequence the forwarder already passed');
      await until('the new event forwarded', () => data().includes('new'));
      // Anything sent twice would have come by now: the re-read from the start came before the new event.
      assert.deepEqual(data(), [1, 2, 3, 'new']);
      const lines = notices.filter((n) => /epoch changed/.test(n));
      assert.equal(lines.length, 1, notices.join('\n'));
      assert.match(lines[0]!, /reading again from the start/);
    } finally {
      stop.abort();
      await done;
      await h.close();
    }
  });
});
