// The Python client notices a restore the way the TypeScript one does (test/epoch/client-epoch.test.ts):
// a page says the store's epoch and the address's last sequence (page.epoch, page.last_sequence), and
// consume(), on a page of another epoch, reads the address again from the start and skips the event
// ids it handled. The restore is real (restore-helper.ts): on SQLite the backup comes back and the
// next event gets a sequence the client's cursor already passed, which a cursor alone would skip.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { restorableService, restorer } from '../epoch/restore-helper.js';
import { createAddress, deliver, STORE } from '../helpers.js';

const hasPython = spawnSync('python3', ['--version']).status === 0;

// Consumes until idle, says what it handled and the epoch, waits for a line on stdin (the restore
// happens meanwhile), consumes until idle again.
const SCRIPT = `
import json, sys
sys.path.insert(0, "clients/python")
from return_address import ReturnAddress
url, id, token = sys.argv[1:4]
ra = ReturnAddress(id, token, url)
page = ra.page(after=0)
print(json.dumps({"page": {"epoch": page.epoch, "last_sequence": page.last_sequence, "events": len(page["events"]),
                           "plain": page == {"events": page["events"], "next_cursor": page["next_cursor"], "has_more": page["has_more"]}}}), flush=True)
handled = []
for phase in (1, 2):
    if phase == 2:
        sys.stdin.readline()
    handled = []
    ra.consume(lambda e: handled.append(e["data"]), idle_seconds=0, ack=False)
    print(json.dumps({"phase": phase, "handled": handled, "epoch": ra.epoch, "cursor": ra.cursor}), flush=True)
`;

describe(`python consume and a restore (${STORE})`, { skip: hasPython ? false : 'python3 is not installed' }, () => {
  const s = restorableService();

  it('re-reads from the start on a new epoch, hands each event id over once, and reaches an event at a reused sequence', async () => {
    const r = restorer(s.storage);
    const a = await createAddress(s.svc.baseUrl);
    for (let i = 1; i <= 2; i++) assert.equal((await deliver(s.svc.baseUrl, a, { data: i })).status, 202);
    await r.backup();
    assert.equal((await deliver(s.svc.baseUrl, a, { data: 3 })).status, 202);

    const py = spawn('python3', ['-c', SCRIPT, s.svc.baseUrl, a.id, a.token], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    py.stdout.on('data', (d: Buffer) => (out += d.toString()));
    py.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => py.once('close', resolve));
    const lines = () =>
      out
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
    const until = async (n: number) => {
      const deadline = Date.now() + 60_000;
      while (lines().length < n) {
        if (Date.now() > deadline || py.exitCode !== null) assert.fail(`python stopped or took too long; stdout ${out} stderr ${err}`);
        await new Promise((res) => setTimeout(res, 50));
      }
    };
    try {
      await until(2);
      const [first, phase1] = lines();
      assert.match(first.page.epoch, /^[0-9a-f]{32}$/);
      assert.deepEqual([first.page.last_sequence, first.page.events, first.page.plain], [3, 3, true], 'a Page is still the plain page');
      assert.deepEqual(phase1, { phase: 1, handled: [1, 2, 3], epoch: first.page.epoch, cursor: 3 });

      s.svc = await r.restore(s.svc);
      const fresh = await deliver(s.svc.baseUrl, a, { data: 'new' });
      assert.equal(fresh.status, 202);
      // SQLite: the backup held sequences 1-2, so the new event is sequence 3 again, which the cursor passed.
      if (STORE === 'sqlite') assert.equal(fresh.json.event.sequence, 3);

      py.stdin.end('go\n');
      assert.equal(await exited, 0, err);
      const phase2 = lines()[2];
      assert.deepEqual(phase2.handled, ['new'], `only the new event; stderr: ${err}`);
      assert.notEqual(phase2.epoch, first.page.epoch, 'the client took the new epoch');
      assert.match(phase2.epoch, /^[0-9a-f]{32}$/);
      assert.equal(phase2.cursor, fresh.json.event.sequence);
      assert.equal(err.match(/epoch changed/g)?.length, 1, `one line says why it reads again: ${err}`);
    } finally {
      if (py.exitCode === null) py.kill();
    }
  });
});
