// The request log never holds an inbox secret or a read token, however the URL spells them
// (a log reader must never be able to write to or read a queue): percent-encoded path letters, doubled slashes, upper case, a credential in a query
// string or in a path that is no route. Checked on redactUrl and on a real service's log.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { redactUrl } from '../../src/http/plugins/request-logging.js';
import { createAddress, createTestStorage, spawnService } from '../helpers.js';

const SECRET = 'aa_ingress_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-abcde';
const TOKEN = 'aa_read_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-abcdefg';

describe('log redaction', () => {
  it('redacts the secret segment and any credential, however the URL is spelt', () => {
    const urls = [
      `/api/v1/inbox/addr_x/${SECRET}`,
      `/api/v1/%69nbox/addr_x/${SECRET}`,
      `//api/v1//inbox/addr_x/${SECRET}`,
      `/API/V1/INBOX/addr_x/${SECRET}`,
      `/api/v1/inbox/addr_x/${SECRET.slice(11)}`,
      `/api/v1/hooks/addr_x/${SECRET}/github?x=1`,
      `/api/v1/addresses/addr_x/events?token=${TOKEN}`,
      `/nowhere/${encodeURIComponent(SECRET)}`,
      `/nowhere/${encodeURIComponent(encodeURIComponent(SECRET))}`,
      `/api/v1/%ZZ/${SECRET}`,
      `/x?${TOKEN.replace('_', '%5F')}`,
    ];
    for (const u of urls) {
      const out = redactUrl(u);
      assert.ok(out.includes('[REDACTED]'), `${u} -> ${out}`);
      assert.ok(!out.includes(SECRET.slice(11)) && !out.includes(TOKEN.slice(8)), `${u} -> ${out}`);
    }
    assert.equal(redactUrl('/api/v1/addresses/addr_x/events?after=3'), '/api/v1/addresses/addr_x/events?after=3');
    // An approval page's secret (design.md, "Approvals"), however spelt, and one that lost its prefix.
    const APPROVE = 'aa_approve_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-abcdefg';
    for (const u of [
      `/approve/apr_x/${APPROVE}`,
      `/APPROVE/apr_x/${APPROVE.slice(11)}`,
      `//approve//apr_x/${APPROVE.slice(11)}?a=1`,
      `/%61pprove/apr_x/${APPROVE.slice(11)}`,
      `/x?s=${APPROVE}`,
    ]) {
      const out = redactUrl(u);
      assert.ok(!out.includes(APPROVE.slice(11)), `${u} -> ${out}`);
    }
    assert.equal(redactUrl(`/approve/apr_x/${APPROVE}`), '/approve/apr_x/[REDACTED]');
    // The capture URL's query holds other services' credentials (an OAuth code): dropped whole.
    assert.equal(redactUrl(`/api/v1/hooks/addr_x/${SECRET}/oauth?code=4%2F0Aea&state=s`), '/api/v1/hooks/addr_x/[REDACTED]/oauth?[REDACTED]');
    // Absolute-form targets (what a forward proxy sends): the OAuth code was logged in clear.
    assert.equal(
      redactUrl(`http://ra.example:3000/api/v1/hooks/addr_x/${SECRET}/oauth?code=4%2F0Aea&state=s`),
      'http://ra.example:3000/api/v1/hooks/addr_x/[REDACTED]/oauth?[REDACTED]',
    );
    assert.equal(redactUrl(`HTTP://h//api/v1/HOOKS/addr_x/${SECRET}?code=c`), 'HTTP://h/api/v1/HOOKS/addr_x/[REDACTED]?[REDACTED]');
  });

  it('keeps them out of a real service log', async () => {
    const storage = await createTestStorage();
    const svc = await spawnService({ LOG_LEVEL: 'info' }, storage);
    try {
      const a = await createAddress(svc.baseUrl);
      const secretPart = a.secret.slice('aa_ingress_'.length);
      for (const path of [
        `/api/v1/%69nbox/${a.id}/${a.secret}`,
        `//api/v1/inbox/${a.id}/${a.secret}`,
        `/API/V1/INBOX/${a.id}/${a.secret}`,
        `/api/v1/addresses/${a.id}/events?t=${a.token}`,
        `/x/${a.secret}`,
      ]) {
        await fetch(svc.baseUrl + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      }
      // The capture URL, an OAuth code in its query, and a signing secret in a body.
      const oauthCode = 'oauth-code-4f0a9b8c7d6e';
      const signingSecret = 'signing-secret-9a8b7c6d5e4f';
      await fetch(`${a.body.endpoints.hook_url}/oauth?code=${oauthCode}&state=s`, { headers: { accept: 'text/html' } });
      await fetch(`${svc.baseUrl}/api/v1/addresses/${a.id}/signing-secrets`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${a.token}` },
        body: JSON.stringify({ github: signingSecret }),
      });
      await new Promise((r) => setTimeout(r, 300));
      const log = svc.output();
      assert.ok(log.includes('[REDACTED]'));
      assert.ok(!log.includes(secretPart), 'the inbox secret is not in the log');
      assert.ok(!log.includes(a.token.slice('aa_read_'.length)), 'the read token is not in the log');
      assert.ok(log.includes('/oauth?[REDACTED]'), 'the capture request was logged');
      assert.ok(!log.includes(oauthCode), 'an OAuth code is not in the log');
      assert.ok(log.includes('signing-secrets') && !log.includes(signingSecret), 'a signing secret is not in the log');
    } finally {
      svc.proc.kill('SIGTERM');
      await svc.exited;
      await storage.drop();
    }
  });
});
