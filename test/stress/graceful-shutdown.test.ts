// SIGTERM during load and long-polls (design.md, "Durability: group commit"): waiting readers get an empty 200
// page, in-flight deliveries are answered or fail cleanly, nothing answered 2xx is lost, and the
// process exits 0.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { api, createAddress, createTestStorage, range, STORE, sleep, spawnService } from '../helpers.js';

describe(`graceful shutdown (${STORE})`, () => {
  it('SIGTERM under load: long-polls end with empty pages, answered deliveries survive, exit code 0', { timeout: 120_000 }, async () => {
    const storage = await createTestStorage();
    const svc = await spawnService({ LOG_LEVEL: 'warn' }, storage);
    const a = await createAddress(svc.baseUrl);
    const idle = await Promise.all(range(1, 20).map(() => createAddress(svc.baseUrl)));
    const answered: number[] = [];
    const refused: string[] = [];
    let stop = false;
    const writers = range(1, 6).map(async () => {
      while (!stop) {
        try {
          const r = await api(svc.baseUrl, 'POST', a.inboxUrl, { json: { data: 1 } });
          if (r.status === 202) answered.push(r.json.event.sequence);
          else refused.push(`${r.status} ${r.text}`);
        } catch {
          return; // connection refused or closed: never answered, so nothing was promised
        }
      }
    });
    const polls = idle.map((b) => api(svc.baseUrl, 'GET', `/api/v1/addresses/${b.id}/events?wait=25`, { token: b.token }));
    await sleep(800);
    const t0 = performance.now();
    svc.proc.kill('SIGTERM');
    const pages = await Promise.all(polls);
    const exit = await svc.exited;
    stop = true;
    await Promise.all(writers);
    assert.deepEqual(exit, { code: 0, signal: null }, `exit status; log:\n${svc.output().slice(-2000)}`);
    assert.ok(performance.now() - t0 < 10_000, 'shutdown did not wait out the 25 s long-polls');
    for (const p of pages) {
      assert.equal(p.status, 200, p.text);
      assert.deepEqual(p.json, { events: [], next_cursor: 0, has_more: false });
    }
    assert.deepEqual(refused, [], 'no delivery got an error answer during the drain');
    assert.ok(answered.length > 0);

    const again = await spawnService({ LOG_LEVEL: 'warn' }, storage, svc);
    try {
      const seqs: number[] = [];
      for (let cursor = 0; ; ) {
        const r = await api(again.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events?after=${cursor}&limit=100`, { token: a.token });
        seqs.push(...r.json.events.map((e: { sequence: number }) => e.sequence));
        cursor = r.json.next_cursor;
        if (!r.json.has_more) break;
      }
      assert.deepEqual(seqs, range(1, seqs.length), 'gapless');
      for (const s of answered) assert.ok(s <= seqs.length, `answered sequence ${s} is stored`);
    } finally {
      again.proc.kill('SIGTERM');
      await again.exited;
      await storage.drop();
    }
  });
});
