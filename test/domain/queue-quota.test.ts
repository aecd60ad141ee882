// The append rule's arithmetic (src/domain/queue-quota.ts): the stores prune and refuse by it, and
// the store contract holds both stores to the same answers over real rows.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { roomToFree, storedBytes } from '../../src/domain/queue-quota.js';

const limits = { maxEventsPerAddress: 3, maxBytesPerAddress: 100 };

describe('queue quota arithmetic', () => {
  it('an event weighs its data and metadata as UTF-8 and the bytes stored beside it', () => {
    assert.equal(storedBytes('"é"', null), 4);
    assert.equal(storedBytes('1', '{"k":"€"}'), 1 + 11);
    assert.equal(storedBytes('null', null, 100), 104);
  });

  it('fits while both limits hold, an exact fit included', () => {
    assert.equal(roomToFree({ eventCount: 2, eventBytes: 60 }, 40, limits), null);
    assert.equal(roomToFree({ eventCount: 0, eventBytes: 0 }, 100, limits), null);
  });

  it('names what must be freed when either limit would be passed', () => {
    assert.deepEqual(roomToFree({ eventCount: 3, eventBytes: 10 }, 1, limits), { events: 1, bytes: -89 });
    assert.deepEqual(roomToFree({ eventCount: 1, eventBytes: 60 }, 41, limits), { events: -1, bytes: 1 });
    assert.deepEqual(roomToFree({ eventCount: 5, eventBytes: 150 }, 10, limits), { events: 3, bytes: 60 });
  });
});
