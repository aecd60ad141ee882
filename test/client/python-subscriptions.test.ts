// The Python client's webhook subscription methods (subscribe, subscriptions, subscription,
// resume_subscription, unsubscribe) against a started service with PUSH_ALLOW_PRIVATE=true and the
// push tests' real local receiver: python_subscriptions_check.py subscribes from Python and delivers;
// here the receiver's requests are checked: every matching event, in order, once, each signed with
// the secret Python was given, and the list empty after Python deleted it.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { api, startTestService, type TestService } from '../helpers.js';
import { type Receiver, startReceiver, verify } from '../push/receiver.js';

const hasPython = spawnSync('python3', ['--version']).status === 0;
const N = 8;

describe('Python client: webhook subscriptions against a live service and receiver', { skip: hasPython ? false : 'python3 is not installed' }, () => {
  let svc: TestService;
  let rx: Receiver;
  before(async () => {
    svc = await startTestService({ PUSH_ALLOW_PRIVATE: 'true' });
    rx = await startReceiver();
  });
  after(async () => {
    await rx?.close();
    await svc?.stop();
  });

  it('subscribe from Python: the receiver gets every matching event signed and in order; list, show, resume, delete', async () => {
    // Asynchronous: the service answers from this process, so a synchronous spawn would starve it.
    const proc = spawn('python3', ['test/client/python_subscriptions_check.py', svc.baseUrl, rx.url, String(N)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    proc.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    proc.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    const code = await new Promise<number | null>((resolve) => proc.on('close', resolve));
    assert.equal(code, 0, `${out}\n${err}`);
    const r = JSON.parse(out.trim().split('\n').at(-1)!) as { address_id: string; token: string; subscription_id: string; secret: string };
    assert.deepEqual(
      rx.received.map((d) => [d.event.sequence, d.event.type, d.event.data.i]),
      Array.from({ length: N }, (_, k) => [k < 2 ? k + 1 : k + 2, 'py.n', k + 1]),
      'every py.* event once, in sequence order; other.x (sequence 3) passed over',
    );
    for (const d of rx.received) {
      verify(d, r.secret);
      assert.equal(d.headers['webhook-id'], d.event.id);
      assert.equal(d.event.address_id, r.address_id);
    }
    assert.throws(() => verify(rx.received[0]!, `whsec_${Buffer.alloc(32, 1).toString('base64')}`), 'another secret does not verify');
    const listed = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${r.address_id}/subscriptions`, { token: r.token });
    assert.deepEqual(listed.json.subscriptions, [], 'deleted from Python');
    const consumers = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${r.address_id}/consumers`, { token: r.token });
    assert.deepEqual(
      consumers.json.consumers.map((c: { name: string; cursor: number }) => [c.name, c.cursor]),
      [[`push:${r.subscription_id}`, N + 1]],
      'its position stays, past every event',
    );
  });
});
