import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ADDRESS_ID_RE,
  EVENT_ID_RE,
  hashSecret,
  INBOX_SECRET_RE,
  newAddressId,
  newEventId,
  newInboxSecret,
  newReadToken,
  newSlug,
  READ_TOKEN_RE,
  SLUG_RE,
  secretMatches,
} from '../../src/domain/credentials.js';

describe('credentials', () => {
  it('have the documented shapes and do not repeat', () => {
    const gens: [() => string, RegExp][] = [
      [newAddressId, ADDRESS_ID_RE],
      [newEventId, EVENT_ID_RE],
      [newSlug, SLUG_RE],
      [newReadToken, READ_TOKEN_RE],
      [newInboxSecret, INBOX_SECRET_RE],
    ];
    for (const [gen, re] of gens) {
      const seen = new Set<string>();
      for (let i = 0; i < 2000; i++) {
        const v = gen();
        assert.match(v, re);
        seen.add(v);
      }
      assert.equal(seen.size, 2000);
    }
  });

  it('spread over the whole alphabet (no modulo bias to one end)', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 2000; i++) for (const c of newAddressId().slice(5)) counts.set(c, (counts.get(c) ?? 0) + 1);
    assert.equal(counts.size, 36);
    const expected = (2000 * 26) / 36;
    for (const [c, n] of counts) assert.ok(n > expected * 0.8 && n < expected * 1.2, `${c}: ${n}`);
  });

  it('event ids carry their creation time after a random head, and stay unique within one millisecond', () => {
    const t = Date.UTC(2026, 10, 23, 12, 0, 0, 123);
    const ids = Array.from({ length: 2000 }, () => newEventId(t));
    for (const id of ids) {
      assert.match(id, EVENT_ID_RE);
      assert.equal(parseInt(id.slice(9, 18), 36), t, 'characters 10-18 are the creation time in base36');
    }
    assert.equal(new Set(ids).size, ids.length);
    // Ids look unrelated: two made one after the other share no long prefix (the conformance suite
    // checks fewer than 6 characters after evt_).
    const prefix = (a: string, b: string) => [...a].findIndex((c, i) => c !== b[i]);
    const shared = ids.slice(1).map((id, i) => prefix(id.slice(4), ids[i]!.slice(4)));
    assert.ok(Math.max(...shared) < 5, `longest shared head: ${Math.max(...shared)}`);
    // The time part sorts like the time, so the stores' index on it grows at one end.
    const timePart = (id: string) => id.slice(9, 18);
    assert.ok(timePart(newEventId(t + 1)) > timePart(newEventId(t)) && timePart(newEventId(t)) > timePart(newEventId(t - 1)));
  });

  it('a secret matches only its own hash', () => {
    const t = newReadToken();
    const h = hashSecret(t);
    assert.equal(h.length, 32);
    assert.equal(secretMatches(t, h), true);
    assert.equal(secretMatches(`${t}x`, h), false);
    assert.equal(secretMatches(newReadToken(), h), false);
    assert.equal(secretMatches(t, h.subarray(0, 16)), false);
  });

  it('a secret remembered after a match still matches only itself, and only for the hash it matched', () => {
    const t = newInboxSecret();
    const h = hashSecret(t);
    assert.equal(secretMatches(t, h), true); // remembered from here on
    assert.equal(secretMatches(t, h), true);
    // Near misses of the remembered secret: each falls through to the hash, which refuses it.
    assert.equal(secretMatches(`${t}x`, h), false);
    assert.equal(secretMatches(t.slice(0, -1), h), false);
    assert.equal(secretMatches(`${t.slice(0, -1)}${t.endsWith('A') ? 'B' : 'A'}`, h), false);
    assert.equal(secretMatches('', h), false);
    // Another address's hash does not learn this secret, and its own secret still matches it.
    const other = newInboxSecret();
    const otherHash = hashSecret(other);
    assert.equal(secretMatches(t, otherHash), false);
    assert.equal(secretMatches(other, otherHash), true);
    assert.equal(secretMatches(other, h), false);
    // A second copy of the same hash bytes (a row read again from the store) checks by hashing.
    assert.equal(secretMatches(t, Buffer.from(h)), true);
    assert.equal(secretMatches(other, Buffer.from(h)), false);
  });
});
