// Credential rotation's store rule, as both stores must answer it (npm test runs this on both): the
// credential columns are replaced only while they still hold what the rotation read (a
// compare-and-set, so of two rotations from the same row one wins), an unknown address is `gone`,
// and the replaced row is what every later read returns (SQLite's cached row included).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hashSecret, newInboxSecret, newReadToken } from '../../src/domain/credentials.js';
import type { OpenedStore } from '../../src/storage/open-store.js';
import { useFreshStore } from './contract-store.js';
import { newAddress, RATE } from './store-records.js';

describe('credential rotation: store contract', () => {
  let store: OpenedStore;
  useFreshStore((opened) => {
    store = opened;
  });

  const fresh = () => ({ readTokenHash: hashSecret(newReadToken()), inboxSecretHash: hashSecret(newInboxSecret()), signingKeys: Buffer.alloc(97, 7) });

  it('replaces the columns when they are as expected; a stale expectation is `changed` and writes nothing; an unknown address is `gone`', async () => {
    const a = newAddress();
    await store.createAddress(a, { ...RATE, now: Date.now() });
    assert.ok(await store.getAddress(a.id), 'read once: SQLite now holds the row in memory');
    const expected = { readTokenHash: a.readTokenHash, inboxSecretHash: a.inboxSecretHash, signingKeys: a.signingKeys };
    const next = fresh();
    assert.equal(await store.credentials.replaceCredentials(a.id, expected, next), 'replaced');
    const read = await store.getAddress(a.id);
    assert.ok(read);
    assert.deepEqual([read.readTokenHash, read.inboxSecretHash, read.signingKeys], [next.readTokenHash, next.inboxSecretHash, next.signingKeys]);
    assert.equal(read.slug, a.slug, 'the rest of the row is unchanged');
    assert.equal(store.heldAddress?.(a.id)?.readTokenHash.equals(a.readTokenHash) ?? false, false, 'no cached copy holds the old hash');

    assert.equal(await store.credentials.replaceCredentials(a.id, expected, fresh()), 'changed', 'the old hashes no longer match');
    assert.deepEqual((await store.getAddress(a.id))?.readTokenHash, next.readTokenHash, 'a stale rotation wrote nothing');
    // Only one of the two hashes stale is stale too.
    assert.equal(await store.credentials.replaceCredentials(a.id, { ...next, inboxSecretHash: a.inboxSecretHash }, fresh()), 'changed');
    assert.equal(await store.credentials.replaceCredentials('addr_00000000000000000000000000', expected, fresh()), 'gone');
  });

  it('rotations from the same row, in parallel: exactly one is replaced', async () => {
    const a = newAddress();
    await store.createAddress(a, { ...RATE, now: Date.now() });
    const expected = { readTokenHash: a.readTokenHash, inboxSecretHash: a.inboxSecretHash, signingKeys: a.signingKeys };
    const nexts = Array.from({ length: 20 }, fresh);
    const outcomes = await Promise.all(nexts.map((n) => store.credentials.replaceCredentials(a.id, expected, n)));
    assert.equal(outcomes.filter((o) => o === 'replaced').length, 1, outcomes.join(','));
    assert.equal(outcomes.filter((o) => o === 'changed').length, 19);
    const winner = nexts[outcomes.indexOf('replaced')]!;
    assert.deepEqual((await store.getAddress(a.id))?.readTokenHash, winner.readTokenHash);
  });
});
