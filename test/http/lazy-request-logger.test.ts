// The request's child logger is built only when a line is written at an enabled level, and then
// writes exactly what an eager pino child would (the same bindings, level and message).
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';
import { lazyRequestLogger } from '../../src/http/plugins/lazy-request-logger.js';

function capturedLogger(level: string): { log: FastifyBaseLogger; lines: () => Record<string, unknown>[]; children: () => number } {
  let text = '';
  const sink = new Writable({
    write(chunk, _enc, done) {
      text += chunk.toString();
      done();
    },
  });
  const log = pino({ level }, sink) as unknown as FastifyBaseLogger;
  let children = 0;
  // Counts children made; pino's children inherit from their parent, so `this` is whichever made it.
  const child = log.child;
  log.child = function (this: FastifyBaseLogger, bindings, options) {
    children++;
    return child.call(this, bindings, options);
  } as FastifyBaseLogger['child'];
  return {
    log,
    lines: () =>
      text
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    children: () => children,
  };
}

describe('lazyRequestLogger (the per-request child logger)', () => {
  it('builds no child while nothing is written at an enabled level', () => {
    const c = capturedLogger('warn');
    const req = lazyRequestLogger(c.log, { reqId: 'req-1' }, {});
    req.info('incoming request');
    req.debug({ x: 1 }, 'detail');
    req.trace('trace');
    assert.equal(c.children(), 0);
    assert.equal(c.lines().length, 0);
    assert.equal(req.level, 'warn');
  });

  it('writes an enabled line with the request bindings, once built, like an eager child', () => {
    const c = capturedLogger('info');
    const lazy = lazyRequestLogger(c.log, { reqId: 'req-2' }, {});
    const eager = c.log.child({ reqId: 'req-2' });
    lazy.info({ statusCode: 202 }, 'request completed');
    eager.info({ statusCode: 202 }, 'request completed');
    lazy.error(new Error('boom'), 'failed');
    lazy.debug('not at info');
    const [a, b, e] = c.lines();
    assert.equal(c.lines().length, 3);
    const { time: _t1, ...restA } = a as Record<string, unknown>;
    const { time: _t2, ...restB } = b as Record<string, unknown>;
    assert.deepEqual(restA, restB);
    assert.equal(restA.reqId, 'req-2');
    assert.equal(e?.level, 50);
    assert.equal(e?.reqId, 'req-2');
    assert.equal((e?.err as { message: string } | undefined)?.message, 'boom');
    // One child for the lazy logger however many lines it wrote, one for the eager one.
    assert.equal(c.children(), 2);
  });

  it('a child of the request logger keeps the request bindings', () => {
    const c = capturedLogger('info');
    const lazy = lazyRequestLogger(c.log, { reqId: 'req-3' }, {});
    lazy.child({ component: 'mcp' }).warn('w');
    assert.deepEqual(
      c.lines().map((l) => [l.reqId, l.component, l.msg]),
      [['req-3', 'mcp', 'w']],
    );
  });

  it('a route with its own level or serializers gets an eager child that applies them', () => {
    const c = capturedLogger('warn');
    const req = lazyRequestLogger(c.log, { reqId: 'req-4' }, { level: 'debug' });
    req.debug('now enabled');
    assert.equal(c.lines()[0]?.msg, 'now enabled');
  });
});
