import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { WakeReason } from '../../src/domain/ports.js';
import { InProcessWakeupHub } from '../../src/wakeup/wakeup-hub.js';

/** A listener that records every wake-up it gets, and a promise of the first. */
function listener() {
  const reasons: WakeReason[] = [];
  let first!: (r: WakeReason) => void;
  const woken = new Promise<WakeReason>((resolve) => (first = resolve));
  return {
    reasons,
    woken,
    wake: (r: WakeReason) => {
      reasons.push(r);
      first(r);
    },
  };
}

describe('InProcessWakeupHub', () => {
  it('wakes every waiter of the address and none of another', async () => {
    const hub = new InProcessWakeupHub();
    const [a1, a2, b] = [listener(), listener(), listener()];
    hub.register('a', 10_000, a1);
    hub.register('a', 10_000, a2);
    hub.register('b', 50, b);
    assert.equal(hub.size(), 3);
    hub.notify('a');
    assert.deepEqual([a1.reasons, a2.reasons, b.reasons], [['changed'], ['changed'], []], 'woken synchronously, b untouched');
    assert.equal(await b.woken, 'timeout');
    assert.equal(hub.size(), 0);
  });

  it('wakes each registration once; cancel deregisters without waking', async () => {
    const hub = new InProcessWakeupHub();
    const once = listener();
    const w = hub.register('a', 30, once);
    hub.notify('a');
    hub.notify('a');
    w.cancel();
    const cancelled = listener();
    hub.register('a', 30, cancelled).cancel();
    assert.equal(hub.size(), 0);
    await new Promise((r) => setTimeout(r, 80)); // past both timeouts: their timers were cleared
    assert.deepEqual(once.reasons, ['changed']);
    assert.deepEqual(cancelled.reasons, []);
  });

  it('a listener may register again from inside its wake-up; that registration waits for the next change', () => {
    const hub = new InProcessWakeupHub();
    const reasons: WakeReason[] = [];
    const relisten = {
      wake: (r: WakeReason) => {
        reasons.push(r);
        if (reasons.length === 1) hub.register('a', 10_000, relisten);
      },
    };
    hub.register('a', 10_000, relisten);
    hub.notify('a');
    assert.deepEqual(reasons, ['changed'], 'the new registration is not woken by the notification that caused it');
    assert.equal(hub.size(), 1);
    hub.notify('a');
    assert.deepEqual(reasons, ['changed', 'changed']);
    assert.equal(hub.size(), 0);
  });

  it('notifyAll wakes everyone; shutdown ends waits and wakes new ones at once', async () => {
    const hub = new InProcessWakeupHub();
    const ls = ['a', 'b', 'c'].map((id) => {
      const l = listener();
      hub.register(id, 10_000, l);
      return l;
    });
    hub.notifyAll();
    assert.deepEqual(await Promise.all(ls.map((l) => l.woken)), ['changed', 'changed', 'changed']);
    const x = listener();
    hub.register('x', 10_000, x);
    hub.shutdown();
    assert.equal(await x.woken, 'shutdown');
    const y = listener();
    hub.register('y', 10_000, y);
    assert.deepEqual(y.reasons, ['shutdown'], 'woken inside register()');
    assert.equal(hub.size(), 0);
  });

  it('holds 10,000 waiters and releases them all', () => {
    const hub = new InProcessWakeupHub();
    const ls = Array.from({ length: 10_000 }, (_, i) => {
      const l = listener();
      hub.register(`addr${i % 1000}`, 60_000, l);
      return l;
    });
    assert.equal(hub.size(), 10_000);
    for (let i = 0; i < 1000; i++) hub.notify(`addr${i}`);
    assert.ok(ls.every((l) => l.reasons.length === 1 && l.reasons[0] === 'changed'));
    assert.equal(hub.size(), 0);
  });
});
