// X-Forwarded-For is believed only as far as TRUST_PROXY says, so a client cannot dodge the create limit: with the old "trust
// every hop", a client sending its own header got a fresh IP per request and so a fresh create
// limit. Here the test is the one trusted proxy (loopback: Fastify's inject answers as if from
// 127.0.0.1, the peer a proxy on this host would be), and the client spoofs the header.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { api } from '../helpers.js';
import { startInjectedService } from '../inject.js';

async function createsAllowed(env: Record<string, string>): Promise<number[]> {
  const svc = await startInjectedService({ CREATE_RATE_LIMIT: '2', ...env });
  try {
    const statuses: number[] = [];
    for (let n = 1; n <= 4; n++) {
      // What a client sent (9.9.9.n, made up) followed by what our proxy appended (its real peer).
      const r = await api(svc.baseUrl, 'POST', '/api/v1/addresses', { json: {}, headers: { 'x-forwarded-for': `9.9.9.${n}, 203.0.113.7` } });
      statuses.push(r.status);
    }
    return statuses;
  } finally {
    await svc.stop();
  }
}

describe('TRUST_PROXY', () => {
  it('true trusts one hop: a spoofed leftmost address does not reset the create limit', async () => {
    assert.deepEqual(await createsAllowed({ TRUST_PROXY: 'true' }), [201, 201, 429, 429]);
  });
  it('a CIDR list trusts only those proxies', async () => {
    assert.deepEqual(await createsAllowed({ TRUST_PROXY: '127.0.0.0/8' }), [201, 201, 429, 429]);
  });
});
