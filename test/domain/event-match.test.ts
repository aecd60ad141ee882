import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { eventMatches, parseMatch, valueAt } from '../../src/domain/event-match.js';

const event = {
  id: 'evt_1',
  type: 'email.received',
  sequence: 3,
  data: { from: { address: 'noreply@github.com' }, to: ['a@x.io', 'b@x.io'], n: 7, ok: true, none: null, links: [{ url: 'https://u' }], nested: { k: 'v' } },
};

describe('event match (shared by client, CLI, MCP)', () => {
  it('parseMatch splits on the first = and rejects a pair without a path', () => {
    assert.deepEqual(parseMatch(['data.from.address=a@b.c', 'data.q=x=y', 'data.e=']), { 'data.from.address': 'a@b.c', 'data.q': 'x=y', 'data.e': '' });
    assert.throws(() => parseMatch(['nopair']), TypeError);
    assert.throws(() => parseMatch(['=v']), TypeError);
  });

  it('valueAt walks objects and array indexes, and never an inherited property', () => {
    assert.equal(valueAt(event, 'data.from.address'), 'noreply@github.com');
    assert.equal(valueAt(event, 'data.links.0.url'), 'https://u');
    assert.equal(valueAt(event, 'data.missing.deeper'), undefined);
    assert.equal(valueAt(event, 'data.constructor'), undefined);
    assert.equal(valueAt(event, 'data.from.address.length'), undefined);
  });

  it('type is exact; every match must hold; scalars compare as JSON text; arrays match a member', () => {
    assert.ok(eventMatches(event, {}));
    assert.ok(eventMatches(event, { type: 'email.received', match: { 'data.from.address': 'noreply@github.com' } }));
    assert.ok(!eventMatches(event, { type: 'email' }));
    assert.ok(!eventMatches(event, { match: { 'data.from.address': 'noreply@github.com', 'data.n': '8' } }));
    assert.ok(eventMatches(event, { match: { 'data.n': '7', 'data.ok': 'true', 'data.none': 'null', sequence: '3' } }));
    assert.ok(eventMatches(event, { match: { 'data.to': 'b@x.io' } }));
    assert.ok(!eventMatches(event, { match: { 'data.to': 'c@x.io' } }));
    assert.ok(!eventMatches(event, { match: { 'data.nested': '[object Object]' } }), 'an object never equals text');
    assert.ok(!eventMatches(event, { match: { 'data.absent': 'undefined' } }), 'a missing path never matches');
    assert.ok(!eventMatches(event, { match: { 'data.n': ' 7' } }));
  });
});
