// The captured JSON body's check (src/capture/json-body.ts): a number beyond a 64-bit float refuses
// the body (stored as broken JSON) whatever its spelling or depth, while finite spellings that look
// alike are kept; the text a pre-check skips can hold no such number; and what a large body hands
// back for recognising its sender is bounded, so the event loop never rebuilds a value of millions
// of members from the worker's message.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkJsonText, holdsNonFinite, MAX_RECOGNISED_MEMBERS, recognisable } from '../../src/capture/json-body.js';
import { checkJsonBody, LARGE_JSON_CHARS } from '../../src/capture/json-body-pool.js';

describe('captured JSON bodies: non-finite numbers and what recognition gets back', () => {
  it('every spelling of a number beyond a 64-bit float refuses the body, at any depth', () => {
    for (const n of ['1e999', '-1e400', '2E308', '1e+0309', '9'.repeat(400), `-${'1'.repeat(310)}.5`, `${'1'.repeat(250)}e99`]) {
      assert.equal(checkJsonText(`{"a":[1,{"b":[${n}]}],"ok":true}`), null, n);
    }
  });

  it('finite numbers that look alike, and non-finite spellings inside strings, are kept', () => {
    for (const body of ['{"n":1.7976931348623157e308}', '{"tiny":1e-400}', '{"s":"1e999 in a string"}', `{"d":${'1'.repeat(200)}}`, '{"e":1e99}']) {
      const checked = checkJsonText(body);
      assert.notEqual(checked, null, body);
      assert.deepEqual(checked!.value, JSON.parse(body));
    }
  });

  it('holdsNonFinite walks arrays and objects without recursion (100,000 levels)', () => {
    let deep: unknown = [Number.POSITIVE_INFINITY];
    for (let i = 0; i < 100_000; i++) deep = { a: deep };
    assert.equal(holdsNonFinite(deep), true);
    assert.equal(holdsNonFinite({ a: [1, 2, { b: -0 }], c: null }), false);
  });

  it('a large body is checked in the worker by the same rule', async () => {
    const pad = 'x'.repeat(LARGE_JSON_CHARS);
    assert.equal(await checkJsonBody(`{"pad":"${pad}","n":1e999}`), null);
    const fine = await checkJsonBody(`{"pad":"${pad}","type":"invoice.paid"}`);
    assert.ok(fine !== null);
    assert.equal((fine.value as { type: string }).type, 'invoice.paid');
  });

  it('recognition gets the first MAX_RECOGNISED_MEMBERS members of an object, not a million', async () => {
    const wide = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, i]));
    const kept = recognisable({ type: 'x', ...wide }) as Record<string, unknown>;
    assert.equal(Object.keys(kept).length, MAX_RECOGNISED_MEMBERS);
    assert.equal(kept.type, 'x');
    const text = JSON.stringify({ type: 'event_callback', ...wide, pad: 'x'.repeat(LARGE_JSON_CHARS) });
    const checked = await checkJsonBody(text);
    assert.equal(Object.keys(checked!.value as object).length, MAX_RECOGNISED_MEMBERS);
    assert.equal(checked!.json, text, 'the stored text is the whole body');
  });
});
