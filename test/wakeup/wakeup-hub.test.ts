import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WakeupHub } from '../../src/wakeup/wakeup-hub.js';

describe('WakeupHub', () => {
  it('wakes every waiter of the address and none of another', async () => {
    const hub = new WakeupHub();
    const a1 = hub.register('a', 10_000);
    const a2 = hub.register('a', 10_000);
    const b = hub.register('b', 50);
    assert.equal(hub.size(), 3);
    hub.notify('a');
    assert.deepEqual(await Promise.all([a1.settled, a2.settled]), ['changed', 'changed']);
    assert.equal(await b.settled, 'timeout');
    assert.equal(hub.size(), 0);
  });

  it('settles once: abort, cancel and late notifications do nothing more', async () => {
    const hub = new WakeupHub();
    const ac = new AbortController();
    const w = hub.register('a', 10_000, ac.signal);
    ac.abort();
    assert.equal(await w.settled, 'aborted');
    hub.notify('a');
    w.cancel();
    assert.equal(hub.size(), 0);
    const pre = new AbortController();
    pre.abort();
    assert.equal(await hub.register('a', 10_000, pre.signal).settled, 'aborted');
    assert.equal(hub.size(), 0);
  });

  it('notifyAll wakes everyone; shutdown ends waits and refuses new ones', async () => {
    const hub = new WakeupHub();
    const ws = ['a', 'b', 'c'].map((id) => hub.register(id, 10_000));
    hub.notifyAll();
    assert.deepEqual(await Promise.all(ws.map((w) => w.settled)), ['changed', 'changed', 'changed']);
    const x = hub.register('x', 10_000);
    hub.shutdown();
    assert.equal(await x.settled, 'shutdown');
    assert.equal(await hub.register('y', 10_000).settled, 'shutdown');
    assert.equal(hub.size(), 0);
  });

  it('holds 10,000 waiters and releases them all', async () => {
    const hub = new WakeupHub();
    const ws = Array.from({ length: 10_000 }, (_, i) => hub.register(`addr${i % 1000}`, 60_000));
    assert.equal(hub.size(), 10_000);
    for (let i = 0; i < 1000; i++) hub.notify(`addr${i}`);
    const reasons = await Promise.all(ws.map((w) => w.settled));
    assert.ok(reasons.every((r) => r === 'changed'));
    assert.equal(hub.size(), 0);
  });
});
