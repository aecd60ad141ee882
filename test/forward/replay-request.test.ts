// The pieces of a replay without the service: raw bytes kept outside the event (raw.url, served here
// by a real local HTTP server) checked against raw.sha256, and consumer names from target URLs.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { forwardConsumerName } from '../../src/forward/consumer-name.js';
import { RawBytesError, replayRequest } from '../../src/forward/replay-request.js';
import { parseResign, resignHeaders } from '../../src/forward/resign.js';

const bytes = Buffer.from([0, 1, 2, 250, 251, 252]);
const sha256 = createHash('sha256').update(bytes).digest('hex');
const captured = (raw: Record<string, unknown>) =>
  ({
    id: 'evt_1',
    sequence: 9,
    type: 'http.request',
    source: 'https',
    data: { method: 'POST', path: '/x', query: { a: ['1', '2'] }, headers: { 'content-type': 'application/octet-stream', host: 'ra.example' }, raw },
  }) as any;

describe('replay request', () => {
  it('fetches raw.url when raw.content is absent, and refuses bytes that do not match raw.sha256', async () => {
    let served = bytes;
    const server = http.createServer((_req, res) => res.end(served));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/raw`;
    const fetchRaw = async (u: string) => Buffer.from(await (await fetch(u)).arrayBuffer());
    try {
      const req = await replayRequest(captured({ size: bytes.length, sha256, encoding: 'base64', url }), new URL('http://127.0.0.1:4000/hooks?k=v'), fetchRaw);
      assert.deepEqual(req.body, bytes);
      assert.equal(req.path, '/hooks/x?k=v&a=1&a=2');
      assert.equal(req.headers.host, undefined);
      served = Buffer.from([9, 9, 9, 9, 9, 9]);
      await assert.rejects(replayRequest(captured({ size: bytes.length, sha256, encoding: 'base64', url }), new URL('http://h/'), fetchRaw), RawBytesError);
      await assert.rejects(replayRequest(captured({ size: 1, sha256, encoding: 'utf8' }), new URL('http://h/'), fetchRaw), /neither raw.content nor raw.url/);
    } finally {
      server.close();
    }
  });

  it('consumer names fit [a-z0-9_.:-]{1,64}, are stable, and keep two long targets apart', () => {
    const re = /^[a-z0-9_.:-]{1,64}$/;
    assert.equal(forwardConsumerName(new URL('http://localhost:4000/webhooks')), 'forward:localhost:4000-webhooks');
    assert.equal(forwardConsumerName(new URL('http://LOCALHOST:4000/')), 'forward:localhost:4000');
    const long1 = forwardConsumerName(new URL(`http://localhost:4000/${'a'.repeat(100)}/1`));
    const long2 = forwardConsumerName(new URL(`http://localhost:4000/${'a'.repeat(100)}/2`));
    for (const n of [long1, long2]) assert.match(n, re);
    assert.notEqual(long1, long2);
  });

  it("--resign keeps every other header and replaces only the scheme's own", () => {
    const h = resignHeaders(
      parseResign('github:s:with:colons'),
      { 'x-hub-signature-256': 'sha256=old', 'x-github-event': 'push' },
      Buffer.from('{}'),
      0,
      'msg',
    );
    assert.equal(h['x-github-event'], 'push');
    assert.notEqual(h['x-hub-signature-256'], 'sha256=old');
    assert.throws(() => parseResign('standard_webhooks:not base64!'), /whsec_ followed by base64/);
  });
});
