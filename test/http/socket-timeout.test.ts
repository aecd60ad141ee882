// An answer must not be lost to an idle timer: the idle-socket timeout (SOCKET_TIMEOUT_MS) applies between requests only. A request
// handled for longer than it (a long-poll, a capture waiting for its commit or for a held event
// loop) used to have its socket destroyed, so its answer was lost although its event was stored.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createAddress, deliver, sleep, startTestService, type TestService } from '../helpers.js';

describe('socket timeout and requests in flight', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ SOCKET_TIMEOUT_MS: '1500', KEEP_ALIVE_TIMEOUT_MS: '60000' });
  });
  after(async () => {
    await svc.stop();
  });

  /** One raw HTTP/1.1 exchange on a keep-alive socket: the answer's text, and whether the server later closed it. */
  function rawGet(path: string, headers: Record<string, string> = {}): Promise<{ answer: string; closedAfterMs: Promise<number> }> {
    const url = new URL(svc.baseUrl);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname);
      let text = '';
      let answered = 0;
      const closed = new Promise<number>((r) => socket.on('close', () => r(performance.now() - answered)));
      socket.on('error', () => {});
      socket.on('data', (d: Buffer) => {
        text += d.toString('utf8');
        const head = text.indexOf('\r\n\r\n');
        const length = /content-length: (\d+)/i.exec(text)?.[1];
        if (head !== -1 && length !== undefined && Buffer.byteLength(text.slice(head + 4)) >= Number(length) && answered === 0) {
          answered = performance.now();
          resolve({ answer: text, closedAfterMs: closed });
        }
      });
      socket.on('close', () => {
        if (answered === 0) reject(new Error(`the socket was closed before the answer (got ${JSON.stringify(text.slice(0, 200))})`));
      });
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\n${Object.entries(headers)
          .map(([k, v]) => `${k}: ${v}\r\n`)
          .join('')}\r\n`,
      );
    });
  }

  it('a long-poll waiting past the socket timeout gets its answer, holding the event stored meanwhile', async () => {
    const a = await createAddress(svc.baseUrl);
    const poll = rawGet(`/api/v1/addresses/${a.id}/events?wait=4`, { authorization: `Bearer ${a.token}` });
    await sleep(2500); // past SOCKET_TIMEOUT_MS of quiet on the long-poll's socket
    assert.equal((await deliver(svc.baseUrl, a, { type: 'late' })).status, 202);
    const { answer, closedAfterMs } = await poll;
    assert.match(answer, /^HTTP\/1\.1 200/);
    assert.match(answer, /"type":"late"/);
    // Between requests the timeout applies again: the idle keep-alive socket is dropped.
    const idle = await closedAfterMs;
    assert.ok(idle >= 1000 && idle < 10_000, `the idle socket was closed after the socket timeout (${Math.round(idle)} ms)`);
  });
});
