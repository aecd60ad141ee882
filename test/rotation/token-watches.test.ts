// The hub's token watches (wakeup/token-watches.ts) alone: a rotation ends exactly the waits of the
// old token, once; a wait that registers after the rotation was heard (authenticated just before
// it) ends at once; the memory of rotated tokens is bounded; after a lost notification connection,
// recheckTokens ends the waits whose token the row no longer holds. No store: the rule is in memory.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hashSecret, newReadToken, tokenIdentity } from '../../src/domain/credentials.js';
import type { AddressRecord } from '../../src/domain/model.js';
import { REMEMBER_MAX, REMEMBER_MS, TokenWatches } from '../../src/wakeup/token-watches.js';
import { InProcessWakeupHub } from '../../src/wakeup/wakeup-hub.js';

const listener = () => {
  const l = { calls: 0, revoked: () => void l.calls++ };
  return l;
};

describe('token watches', () => {
  it('a rotation ends the waits of the old token on that address, each once, and no other', () => {
    const hub = new InProcessWakeupHub();
    const [old, kept] = [hashSecret(newReadToken()), hashSecret(newReadToken())];
    const a = listener();
    const b = listener();
    const other = listener();
    const elsewhere = listener();
    hub.watchToken('addr_a', old, a);
    hub.watchToken('addr_a', old, b);
    hub.watchToken('addr_a', kept, other);
    hub.watchToken('addr_b', old, elsewhere); // same hash, another address: not its rotation
    assert.equal(hub.tokenWatches(), 4);
    hub.tokenRevoked('addr_a', tokenIdentity(old));
    hub.tokenRevoked('addr_a', tokenIdentity(old)); // the NOTIFY heard back by the rotating instance
    assert.deepEqual([a.calls, b.calls, other.calls, elsewhere.calls], [1, 1, 0, 0]);
    assert.equal(hub.tokenWatches(), 2);
  });

  it('a cancelled watch is never told; a watch registered after the rotation is told inside watchToken', () => {
    const hub = new InProcessWakeupHub();
    const old = hashSecret(newReadToken());
    const gone = listener();
    hub.watchToken('addr_a', old, gone).cancel();
    hub.tokenRevoked('addr_a', tokenIdentity(old));
    assert.equal(gone.calls, 0);
    const late = listener();
    const w = hub.watchToken('addr_a', old, late);
    assert.equal(late.calls, 1, 'ended as it registered');
    w.cancel();
    assert.equal(hub.tokenWatches(), 0);
    const fresh = listener();
    hub.watchToken('addr_a', hashSecret(newReadToken()), fresh);
    assert.equal(fresh.calls, 0, 'a new token is not in the memory');
  });

  it('the memory of rotated tokens is bounded in count and in time', () => {
    let now = 0;
    const w = new TokenWatches(() => now);
    for (let i = 0; i <= REMEMBER_MAX; i++) w.revoked('addr_a', i.toString(16).padStart(32, '0'));
    const first = listener();
    w.watch('addr_a', '0'.repeat(32), first);
    assert.equal(first.calls, 0, `the oldest of ${REMEMBER_MAX + 1} is forgotten`);
    const last = listener();
    w.watch('addr_a', REMEMBER_MAX.toString(16).padStart(32, '0'), last);
    assert.equal(last.calls, 1);
    now += REMEMBER_MS;
    const later = listener();
    w.watch('addr_a', (REMEMBER_MAX - 1).toString(16).padStart(32, '0'), later);
    assert.equal(later.calls, 0, `forgotten after ${REMEMBER_MS} ms`);
  });

  it('recheckTokens (after a lost notification connection) ends the waits whose token the row no longer holds', async () => {
    const hub = new InProcessWakeupHub();
    const [old, current] = [hashSecret(newReadToken()), hashSecret(newReadToken())];
    const stale = listener();
    const live = listener();
    const deleted = listener();
    hub.watchToken('addr_a', old, stale);
    hub.watchToken('addr_a', current, live);
    hub.watchToken('addr_gone', old, deleted);
    const rows = new Map([['addr_a', { id: 'addr_a', readTokenHash: current } as AddressRecord]]);
    await hub.recheckTokens(async (id) => rows.get(id) ?? null);
    assert.deepEqual([stale.calls, live.calls, deleted.calls], [1, 0, 0], 'a deleted address is left to the re-read (404)');
    assert.equal(hub.tokenWatches(), 2);
  });
});
