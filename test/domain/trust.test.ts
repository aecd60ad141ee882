// The pure rules of trust (design.md, "Trust: what an agent may believe"): its JSON text, the
// schema that documents it, provider dedupe keys, and a signature that matched but went stale.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { captureTrust } from '../../src/capture/capture-trust.js';
import { checkSignature } from '../../src/capture/signature-verification.js';
import { captureDedupeKey, inboxDedupeKey } from '../../src/domain/dedupe-key.js';
import { TRUST_INGRESSES, TRUST_METHODS, type Trust, trustJson } from '../../src/domain/trust.js';
import { emailTrust } from '../../src/email/email-trust.js';
import { Trust as TrustSchema } from '../../src/http/schemas.js';

const hex = (secret: string, text: string) => createHmac('sha256', secret).update(text).digest('hex');

describe('trust', () => {
  it('trustJson is the object as JSON, whatever its strings hold', () => {
    const t: Trust = { ingress: 'email', verified: false, method: 'dmarc', identity: 'a"b\u0001.example', reason: 'line\nbreak "quoted" \\' };
    assert.deepEqual(JSON.parse(trustJson(t)), t);
    assert.deepEqual(Object.keys(JSON.parse(trustJson(t))), ['ingress', 'verified', 'method', 'identity', 'reason']);
  });

  it("the Event schema's trust names exactly the domain's ingresses and methods", () => {
    const consts = (s: { anyOf: { const?: string }[] }) => s.anyOf.flatMap((x) => (x.const === undefined ? [] : [x.const]));
    const props = TrustSchema.properties as unknown as Record<string, { anyOf: { const?: string }[] }>;
    assert.deepEqual(consts(props.ingress!), [...TRUST_INGRESSES]);
    assert.deepEqual(consts(props.method!), [...TRUST_METHODS]);
  });

  it('inbox keys shaped like a provider key are kept apart; others are untouched', () => {
    assert.equal(inboxDedupeKey('github:abc'), 'unverified:github:abc');
    assert.equal(inboxDedupeKey('shopify:1'), 'unverified:shopify:1');
    assert.equal(inboxDedupeKey('build-981'), 'build-981');
    assert.equal(inboxDedupeKey('githubx:1'), 'githubx:1');
    assert.equal(inboxDedupeKey('unverified:github:abc'), 'unverified:github:abc');
  });

  it('a capture takes a provider key only verified under that scheme, once its secret is set', () => {
    const set =
      (...schemes: string[]) =>
      (s: string) =>
        schemes.includes(s);
    assert.equal(captureDedupeKey('github:d', set(), null), 'github:d', 'no secret: nothing can verify, the key stays');
    assert.equal(captureDedupeKey('github:d', set('github'), null), 'unverified:github:d');
    assert.equal(captureDedupeKey('github:d', set('github'), 'github'), 'github:d');
    assert.equal(captureDedupeKey('github:d', set('github', 'stripe'), 'stripe'), 'unverified:github:d', 'verified under another scheme');
    assert.equal(captureDedupeKey('webhook:m', set('standard_webhooks'), null), 'unverified:webhook:m');
    assert.equal(captureDedupeKey('shopify:1', set('github'), null), 'shopify:1', 'no Shopify scheme: never guarded');
    assert.equal(captureDedupeKey('k-1', set('github'), null), 'k-1');
  });

  it('a signature that matches under a stale timestamp is not verified, but marked stale; a wrong one is not', () => {
    const now = 1_800_000_000_000;
    const t = String(now / 1000 - 3600);
    const body = Buffer.from('{"id":"evt_1"}');
    const stripe = (secret: string) => ({ 'stripe-signature': `t=${t},v1=${hex(secret, `${t}.${body}`)}` });
    const stale = checkSignature(stripe('s'), body, { stripe: 's' }, now);
    assert.equal(stale.verified, false);
    assert.equal(stale.stale, true);
    assert.match(stale.reason, /300 s .*; the signature itself matches/);
    const wrong = checkSignature(stripe('other'), body, { stripe: 's' }, now);
    assert.equal(wrong.verified, false);
    assert.equal(wrong.stale, undefined);
    const slack = (secret: string) => ({ 'x-slack-request-timestamp': t, 'x-slack-signature': `v0=${hex(secret, `v0:${t}:${body}`)}` });
    assert.equal(checkSignature(slack('s'), body, { slack: 's' }, now).stale, true);
    assert.equal(checkSignature(slack('x'), body, { slack: 's' }, now).stale, undefined);
    const key = `whsec_${Buffer.from('a standard webhooks key!').toString('base64')}`;
    const signed = new Webhook(key).sign('msg_1', new Date(Number(t) * 1000), body.toString());
    const sw = (signature: string) => ({ 'webhook-id': 'msg_1', 'webhook-timestamp': t, 'webhook-signature': signature });
    const swStale = checkSignature(sw(signed), body, { standard_webhooks: key }, now);
    assert.equal(swStale.verified, false);
    assert.equal(swStale.stale, true);
    assert.equal(checkSignature(sw('v1,AAAA'), body, { standard_webhooks: key }, now).stale, undefined);
    // Within the tolerance it verifies, and a capture's trust then names the scheme.
    const fresh = checkSignature(stripe('s'), body, { stripe: 's' }, Number(t) * 1000);
    assert.equal(fresh.verified, true);
    assert.deepEqual(captureTrust(fresh), { ingress: 'capture', verified: true, method: 'stripe', identity: 'stripe', reason: null });
  });

  it('mail: only DMARC pass is verified, with the From domain (after its last @) as identity', () => {
    const auth = (dmarc: string) => ({ spf: 'none', dkim: 'none', dmarc, summary: 'none' as const });
    assert.deepEqual(emailTrust({ authentication: auth('pass'), from: { name: null, address: '"a@b"@Mail.Example.COM' } }), {
      ingress: 'email',
      verified: true,
      method: 'dmarc',
      identity: 'mail.example.com',
      reason: null,
    });
    assert.equal(emailTrust({ authentication: auth('fail'), from: null }).verified, false);
    assert.equal(emailTrust({ authentication: auth('temperror'), from: null }).verified, null);
    assert.equal(emailTrust({ authentication: null, from: null }).verified, null);
    assert.equal(emailTrust({ authentication: auth('pass'), from: { name: null, address: 'x@bad\u0000.example' } }).identity, null);
  });
});
