// Group commit keeps the durability promise of design.md, "Durability: group commit": every delivery answered 2xx is on
// disk, including those answered from inside a batch, even when the process is killed with
// SIGKILL while other deliveries of the same burst are still in flight. Real SQLite, real process.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { type Addr, api, createAddress, createTestStorage, onlySqlite, range, sleep, spawnService, type TestStorage } from '../helpers.js';
import { type PipelinedRequest, type PipelinedResponse, sendPipelined } from '../pipelined-http.js';

interface Stats {
  batches: number;
  items: number;
  largestBatch: number;
}

/** The group commit's counters, from the log lines RA_DEBUG_GROUP_COMMIT=1 makes the store write. */
function lastStats(output: string): Stats | undefined {
  const lines = output.split('\n').filter((l) => l.includes('"msg":"group commit counters"'));
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
    const env = { RA_DEBUG_GROUP_COMMIT: '1', LOG_LEVEL: 'info' };
    const first = await spawnService(env, storage);
    const addrs = [await createAddress(first.baseUrl), await createAddress(first.baseUrl)];
    const port = Number(new URL(first.baseUrl).port);
    const delivery = (a: Addr, key: string): PipelinedRequest => ({
      method: 'POST',
      path: new URL(a.inboxUrl).pathname,
      json: { type: 'burst', data: { key } },
      headers: { 'idempotency-key': key },
    });
    /** `sockets` connections, each writing its share of the deliveries in one pipelined write. */
    const burst = (prefix: string, sockets: number, perSocket: number, onAnswer: (key: string, a: Addr, r: PipelinedResponse) => void) =>
      Promise.all(
        range(0, sockets - 1).map((s) => {
          const keys = range(0, perSocket - 1).map((i) => ({ key: `${prefix}-${s}-${i}`, a: addrs[i % 2] as Addr }));
          return sendPipelined(
            port,
            keys.map(({ key, a }) => delivery(a, key)),
            (r, i) => onAnswer(keys[i]!.key, keys[i]!.a, r),
          );
        }),
      );

    // A first burst: deliveries parsed in one turn must be written in shared batches.
    const warm: { key: string; address: string; status: number; id: string | undefined }[] = [];
    await burst('warm', 4, 50, (key, a, r) => warm.push({ key, address: a.id, status: r.status, id: r.json?.event?.id }));
    assert.equal(warm.length, 200, 'every delivery of the first burst is answered');
    assert.deepEqual(
      warm.filter((w) => w.status !== 202),
      [],
      'every delivery of the first burst is accepted',
    );
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
    const refused: string[] = [];
    let killed = false;
    await burst('burst', 6, 50, (key, a, r) => {
      if (r.status !== 202) return void refused.push(`${key}: ${r.status} ${JSON.stringify(r.json)}`);
      answered.push({ key, id: r.json.event.id, sequence: r.json.event.sequence, address: a.id });
      if (answered.length >= 150 && !killed) {
        killed = true;
        first.proc.kill('SIGKILL');
      }
    });
    const exit = await first.exited;
    assert.equal(exit.signal, 'SIGKILL', 'the service was killed, not stopped');
    assert.deepEqual(refused, [], 'no delivery of the burst was refused');
    assert.ok(answered.length >= 150, `the burst was answered up to the kill (${answered.length} of 300)`);

    // Everything answered 2xx is there, with the sequence it was given; nothing else is invented.
    const second = await spawnService(env, storage, { port: first.port, smtpPort: first.smtpPort });
    try {
      for (const a of addrs) {
        const events = await readAll(second.baseUrl, a);
        events.forEach((e, i) => {
          assert.equal(e.sequence, i + 1, 'sequences are gapless from 1');
        });
        assert.equal(new Set(events.map((e) => e.id)).size, events.length, 'no event is stored twice');
        const byId = new Map(events.map((e) => [e.id, e.sequence]));
        for (const x of answered.filter((y) => y.address === a.id)) {
          assert.equal(byId.get(x.id), x.sequence, `delivery ${x.key}, answered 2xx with sequence ${x.sequence}, survived kill -9`);
        }
        for (const w of warm.filter((x) => x.address === a.id)) assert.ok(byId.has(w.id ?? ''), `warm delivery ${w.key} survived`);
      }
      // A delivery whose answer was lost in the kill can be retried safely with its key: either it
      // was stored (200, duplicate) or it is stored now (202), never twice.
      const retry = await api(second.baseUrl, 'POST', (addrs[0] as Addr).inboxUrl, { json: { type: 'burst' }, headers: { 'idempotency-key': 'burst-5-48' } });
      assert.ok(retry.status === 200 || retry.status === 202, retry.text);
    } finally {
      second.proc.kill('SIGTERM');
      await second.exited;
    }
  });
});
