// Group commit keeps the durability promise of decisions.md §5: every delivery answered 2xx is on
// disk, including those answered from inside a batch, even when the process is killed with
// SIGKILL while other deliveries of the same burst are still in flight. Real SQLite, real process.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { api, createAddress, createTestStorage, onlySqlite, sleep, spawnService, type Addr, type TestStorage } from '../helpers.js';

interface Stats { batches: number; items: number; largestBatch: number }

/** The group commit's counters, from the debug lines RA_DEBUG_GROUP_COMMIT=1 makes the store print. */
function lastStats(output: string): Stats | undefined {
  const lines = output.split('\n').filter((l) => l.startsWith('{"groupCommit"'));
  const last = lines.at(-1);
  return last === undefined ? undefined : (JSON.parse(last) as { groupCommit: Stats }).groupCommit;
}

async function readAll(baseUrl: string, a: Addr): Promise<{ id: string; sequence: number }[]> {
  const out: { id: string; sequence: number }[] = [];
  let cursor = 0;
  for (;;) {
    const r = await api(baseUrl, 'GET', `/api/v1/addresses/${a.id}/events?after=${cursor}&limit=100`, { token: a.token });
    assert.equal(r.status, 200, r.text);
    out.push(...(r.json.events as { id: string; sequence: number }[]));
    cursor = r.json.next_cursor;
    if (!r.json.has_more) return out;
  }
}

describe('group commit durability', { skip: onlySqlite }, () => {
  let storage: TestStorage | undefined;
  after(async () => storage?.drop());

  it('every delivery answered 2xx during a batch survives kill -9, sequences stay gapless', async () => {
    storage = await createTestStorage();
    const env = { RA_DEBUG_GROUP_COMMIT: '1', LOG_LEVEL: 'warn' };
    const first = await spawnService(env, storage);
    const addrs = [await createAddress(first.baseUrl), await createAddress(first.baseUrl)];
    const deliver = (a: Addr, key: string) => api(first.baseUrl, 'POST', a.inboxUrl, { json: { type: 'burst', data: { key } }, headers: { 'idempotency-key': key } });

    // A first burst: concurrent deliveries must be written in shared batches.
    const warm = await Promise.all(Array.from({ length: 200 }, (_, i) => deliver(addrs[i % 2] as Addr, `warm-${i}`)));
    assert.ok(warm.every((r) => r.status === 202), 'every delivery of the first burst is accepted');
    let stats: Stats | undefined;
    for (let i = 0; i < 100 && (stats === undefined || stats.items < 200); i++) {
      await sleep(100);
      stats = lastStats(first.output());
    }
    assert.ok(stats, `the store printed its group-commit counters:\n${first.output()}`);
    assert.ok(stats.largestBatch > 1, `deliveries shared a batch (largest batch: ${stats.largestBatch})`);
    assert.ok(stats.batches < stats.items, `fewer commits (${stats.batches}) than deliveries (${stats.items})`);

    // A second burst, cut by SIGKILL once half of it has been answered: the others are in flight,
    // some inside a batch being committed or synced.
    const answered: { key: string; id: string; sequence: number; address: string }[] = [];
    let killed = false;
    const burst = Array.from({ length: 300 }, (_, i) => {
      const a = addrs[i % 2] as Addr;
      const key = `burst-${i}`;
      return deliver(a, key).then((r) => {
        if (r.status === 202 || r.status === 200) {
          answered.push({ key, id: r.json.event.id, sequence: r.json.event.sequence, address: a.id });
          if (answered.length >= 150 && !killed) {
            killed = true;
            first.proc.kill('SIGKILL');
          }
        }
      }, () => { /* cut off by the kill: no promise was made */ });
    });
    await Promise.all(burst);
    const exit = await first.exited;
    assert.equal(exit.signal, 'SIGKILL', 'the service was killed, not stopped');
    assert.ok(answered.length >= 150);

    // Everything answered 2xx is there, with the sequence it was given; nothing else is invented.
    const second = await spawnService(env, storage, { port: first.port, smtpPort: first.smtpPort });
    try {
      for (const a of addrs) {
        const events = await readAll(second.baseUrl, a);
        events.forEach((e, i) => assert.equal(e.sequence, i + 1, 'sequences are gapless from 1'));
        assert.equal(new Set(events.map((e) => e.id)).size, events.length, 'no event is stored twice');
        const byId = new Map(events.map((e) => [e.id, e.sequence]));
        for (const x of answered.filter((y) => y.address === a.id)) {
          assert.equal(byId.get(x.id), x.sequence, `delivery ${x.key}, answered 2xx with sequence ${x.sequence}, survived kill -9`);
        }
        for (const w of warm.filter((_, i) => addrs[i % 2] === a)) assert.ok(byId.has(w.json.event.id));
      }
      // A delivery whose answer was lost in the kill can be retried safely with its key: either it
      // was stored (200, duplicate) or it is stored now (202), never twice.
      const retry = await api(second.baseUrl, 'POST', (addrs[0] as Addr).inboxUrl, { json: { type: 'burst' }, headers: { 'idempotency-key': 'burst-298' } });
      assert.ok(retry.status === 200 || retry.status === 202, retry.text);
    } finally {
      second.proc.kill('SIGTERM');
      await second.exited;
    }
  });
});
