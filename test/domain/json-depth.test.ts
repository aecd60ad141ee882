import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nestsDeeperThan } from '../../src/domain/json-depth.js';

describe('nestsDeeperThan', () => {
  const nest = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;

  it('counts objects and arrays alike, up to the limit and one past it', () => {
    assert.equal(nestsDeeperThan(nest(3), 3), false);
    assert.equal(nestsDeeperThan(nest(4), 3), true);
    assert.equal(nestsDeeperThan('{"a":{"b":[{}]}}', 4), false);
    assert.equal(nestsDeeperThan('{"a":{"b":[{}]}}', 3), true);
    assert.equal(nestsDeeperThan('[[],[],[]]', 2), false, 'siblings do not add up');
  });

  it('ignores brackets inside strings, including after escaped quotes and backslashes', () => {
    assert.equal(nestsDeeperThan('"[[[[[["', 1), false);
    assert.equal(nestsDeeperThan('{"a":"\\"[[[[","b":"\\\\"}', 1), false);
    assert.equal(nestsDeeperThan('["\\\\",[[]]]', 2), true, 'a string ending in a backslash closes');
  });

  it('handles 100,000 levels without recursion', () => {
    assert.equal(nestsDeeperThan(nest(100_000), 65), true);
    assert.equal(nestsDeeperThan(nest(100_000), 100_000), false);
  });
});
