// A filter's cost budget (event-filter.ts, MAX_FILTER_COST): checked when the filter is parsed, for
// every way in, so no read or claim runs a filter that costs more JSON look-ups per event than it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '../../src/domain/errors.js';
import { filterCost, MAX_FILTER_COST, MAX_MATCH_CONDITIONS, parseEventFilter } from '../../src/domain/event-filter.js';

const conditions = (n: number, path: (i: number) => string) => Array.from({ length: n }, (_, i) => `${path(i)}=v`);

describe('filter cost budget', () => {
  it('each condition into data or metadata costs its segments, doubled per numeric segment; others cost 1', () => {
    const f = parseEventFilter({ match: ['data.a=1', 'data.a.b.c=1', 'data.links.0.url=1', 'metadata.k=1', 'type=x', 'sequence=3', 'data=1'] });
    assert.equal(filterCost(f.match), 1 + 3 + 3 * 2 + 1 + 1 + 1 + 1);
  });

  it(`a filter at the budget (${MAX_FILTER_COST}) is taken; one look-up more is 400 naming the budget and the fix`, () => {
    // 4 segments, 3 numeric: 32 each.
    const atBudget = conditions(MAX_FILTER_COST / 32, (i) => `data.a.0.1.${i}`);
    assert.equal(filterCost(parseEventFilter({ match: atBudget }).match), MAX_FILTER_COST);
    const over = [...atBudget, 'data.x=1'];
    assert.throws(
      () => parseEventFilter({ match: over }),
      (err: unknown) =>
        err instanceof ApiError &&
        err.code === 'invalid_request' &&
        /Invalid query parameter 'match': these conditions cost 257 JSON look-ups per event, more than 256.*send fewer conditions/.test(err.message),
    );
    // MCP names its argument.
    assert.throws(() => parseEventFilter({ match: over }, 'argument'), /Invalid argument 'match'/);
  });

  it(`the most conditions allowed (${MAX_MATCH_CONDITIONS}) with plain paths of up to 12 segments fit the budget`, () => {
    const plain = conditions(MAX_MATCH_CONDITIONS, (i) => `data.${Array.from({ length: 12 }, (_, j) => `k${i}_${j}`).join('.')}`);
    assert.equal(filterCost(parseEventFilter({ match: plain }).match), MAX_MATCH_CONDITIONS * 12);
  });
});
