// data.authentication end to end: real SMTP dialogues against the whole service, with the DNS
// answered by an injected resolver (offline), a DKIM key generated here and mailauth's own signer.
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { after, before, describe, it } from 'node:test';
import { dkimSign } from 'mailauth';
import { boundedResolver, DEFAULT_DNS_LOOKUP_TIMEOUT_MS, type DnsResolver, summarize } from '../../src/email/sender-authentication.js';
import { type Addr, createAddress, listEvents, startTestService, type TestService } from '../helpers.js';
import { sendRaw } from './smtp-client.js';

const DOMAIN = 'mail.example.test';
const SENDER_DOMAIN = 'sender.example';
const SELECTOR = 'ra2024';

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const PRIVATE_PEM = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const PUBLIC_B64 = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');

/** The sender domain's records: a DKIM key, SPF for 127.0.0.1 only, a rejecting DMARC policy. */
const TXT: Record<string, string> = {
  [`${SELECTOR}._domainkey.${SENDER_DOMAIN}`]: `v=DKIM1; k=rsa; p=${PUBLIC_B64}`,
  [SENDER_DOMAIN]: 'v=spf1 ip4:127.0.0.1 -all',
  [`_dmarc.${SENDER_DOMAIN}`]: 'v=DMARC1; p=reject',
};

const lookups: string[] = [];
const zoneResolver: DnsResolver = async (name, rrtype) => {
  lookups.push(`${rrtype} ${name}`);
  const txt = rrtype === 'TXT' ? TXT[name.toLowerCase()] : undefined;
  if (txt === undefined) throw Object.assign(new Error(`query ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
  // As dns.promises.resolveTxt: chunks of at most 255 characters per record.
  return [txt.match(/.{1,255}/g) ?? []];
};

function message(to: string, body: string): string {
  return [
    `From: Sender <alerts@${SENDER_DOMAIN}>`,
    `To: ${to}`,
    'Subject: Your verification code',
    'Date: Tue, 01 Oct 2024 10:00:00 +0000',
    `Message-ID: <${randomUUID()}@${SENDER_DOMAIN}>`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    '',
    body,
    '',
  ].join('\r\n');
}

async function signed(raw: string): Promise<string> {
  // mailauth reads the keys from `signatureData` (lib/dkim/dkim-signer.js); its typings want them at the top.
  const options = { signatureData: [{ signingDomain: SENDER_DOMAIN, selector: SELECTOR, privateKey: PRIVATE_PEM }] };
  const result = await dkimSign(raw, options as never);
  assert.deepEqual(result.errors, []);
  return result.signatures + raw;
}

async function onlyEvent(svc: TestService, a: Addr): Promise<any> {
  const res = await listEvents(svc.baseUrl, a, { limit: 10 });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.json.events.length, 1);
  return res.json.events[0];
}

describe('sender authentication over SMTP', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ EMAIL_DOMAIN: DOMAIN }, undefined, { dnsResolver: zoneResolver });
  });
  after(() => svc.stop());

  it('a DKIM-signed message from an SPF-listed IP under a DMARC policy: all pass', async () => {
    const a = await createAddress(svc.baseUrl);
    const raw = await signed(message(a.email, 'Your verification code is 482913.'));
    const r = await sendRaw(svc.smtpPort, { from: `bounces@${SENDER_DOMAIN}`, rcpts: [a.email], message: raw });
    assert.equal(r.final?.code, 250, r.final?.text);
    const ev = await onlyEvent(svc, a);
    assert.deepEqual(ev.data.authentication, { spf: 'pass', dkim: 'pass', dmarc: 'pass', summary: 'pass' });
    // DMARC passed, aligned: the service vouches for the From domain, and says how.
    assert.deepEqual(ev.trust, { ingress: 'email', verified: true, method: 'dmarc', identity: SENDER_DOMAIN, reason: null });
    assert.deepEqual(ev.data.extracted.otp_codes, ['482913']);
    assert.ok(lookups.includes(`TXT ${SELECTOR}._domainkey.${SENDER_DOMAIN}`), `the DKIM key was looked up: ${lookups.join(', ')}`);
  });

  it('a signed header changed after signing: dkim fail, DMARC fail (the envelope is another domain), summary fail', async () => {
    const a = await createAddress(svc.baseUrl);
    const raw = (await signed(message(a.email, 'Pay invoice 1 to account A.'))).replace('Subject: Your verification code', 'Subject: Urgent: pay now');
    const r = await sendRaw(svc.smtpPort, { from: 'bounces@other-envelope.example', rcpts: [a.email], message: raw });
    assert.equal(r.final?.code, 250, r.final?.text);
    const ev = await onlyEvent(svc, a);
    assert.deepEqual(ev.data.authentication, { spf: 'none', dkim: 'fail', dmarc: 'fail', summary: 'fail' });
    // A spoof the check caught: not verified, with the reason.
    assert.deepEqual(ev.trust, {
      ingress: 'email',
      verified: false,
      method: 'dmarc',
      identity: null,
      reason: 'DMARC result is fail, not pass: the From address is not proven',
    });
  });

  it('a body changed after signing: dkim as mailauth reports it (neutral, body hash did not verify), summary fail', async () => {
    const a = await createAddress(svc.baseUrl);
    const raw = (await signed(message(a.email, 'Pay invoice 1 to account A.'))).replace('account A', 'account B');
    const r = await sendRaw(svc.smtpPort, { from: 'bounces@other-envelope.example', rcpts: [a.email], message: raw });
    assert.equal(r.final?.code, 250, r.final?.text);
    const ev = await onlyEvent(svc, a);
    assert.deepEqual(ev.data.authentication, { spf: 'none', dkim: 'neutral', dmarc: 'fail', summary: 'fail' });
  });

  it('a tampered body still passes DMARC through an aligned SPF pass: summary follows DMARC', async () => {
    const a = await createAddress(svc.baseUrl);
    const raw = (await signed(message(a.email, 'Pay invoice 1 to account A.'))).replace('account A', 'account B');
    const r = await sendRaw(svc.smtpPort, { from: `bounces@${SENDER_DOMAIN}`, rcpts: [a.email], message: raw });
    assert.equal(r.final?.code, 250, r.final?.text);
    assert.deepEqual((await onlyEvent(svc, a)).data.authentication, { spf: 'pass', dkim: 'neutral', dmarc: 'pass', summary: 'pass' });
  });

  it('unsigned mail from a domain without records: none everywhere', async () => {
    const a = await createAddress(svc.baseUrl);
    const raw = message(a.email, 'hello').replace(`alerts@${SENDER_DOMAIN}`, 'someone@nowhere.example');
    const r = await sendRaw(svc.smtpPort, { from: 'someone@nowhere.example', rcpts: [a.email], message: raw });
    assert.equal(r.final?.code, 250, r.final?.text);
    const ev = await onlyEvent(svc, a);
    assert.deepEqual(ev.data.authentication, { spf: 'none', dkim: 'none', dmarc: 'none', summary: 'none' });
    // Nothing could be checked: neither proven nor refuted.
    assert.deepEqual(ev.trust, {
      ingress: 'email',
      verified: null,
      method: null,
      identity: null,
      reason: 'DMARC result is none, not pass: the From address is not proven',
    });
    // A reader filtering on trust never sees it as a proven sender.
    const proven = await listEvents(svc.baseUrl, a, { match: 'trust.verified=true' });
    assert.deepEqual(proven.json.events, []);
  });
});

describe('sender authentication when DNS fails', () => {
  for (const [name, resolver] of [
    [
      'throws',
      (async () => {
        throw new Error('resolver exploded');
      }) as DnsResolver,
    ],
    ['never answers', (() => new Promise(() => {})) as DnsResolver],
    [
      'answers SERVFAIL',
      (async () => {
        throw Object.assign(new Error('queryTxt ESERVFAIL'), { code: 'ESERVFAIL' });
      }) as DnsResolver,
    ],
  ] as const) {
    // The bound is proved against the same service's own answer time, not against the clock: first
    // mails while DNS answers at once (the first starts the worker threads, the second is the
    // baseline), then the same mail while DNS fails this way. The configured budget (600 ms, one
    // lookup 200 ms) must show: the failing mail may not take as long as one lookup of the defaults
    // (3 s) more than the baseline. A fixed "under 2 s" failed on a busy machine (load average ~8),
    // where the first mail's worker start alone took most of it.
    it(`a resolver that ${name}: temperror, and the 250 still comes within the bound`, async (t) => {
      let failing = false;
      const switched: DnsResolver = (n, rrtype) => (failing ? resolver(n, rrtype) : zoneResolver(n, rrtype));
      const svc = await startTestService({ EMAIL_DOMAIN: DOMAIN }, undefined, { dnsResolver: switched, dnsLookupTimeoutMs: 200, authenticationBudgetMs: 600 });
      try {
        const timed = async (a: Addr) => {
          const raw = await signed(message(a.email, 'Your code: 123456'));
          const started = performance.now();
          const r = await sendRaw(svc.smtpPort, { from: `bounces@${SENDER_DOMAIN}`, rcpts: [a.email], message: raw });
          assert.equal(r.final?.code, 250, r.final?.text);
          return performance.now() - started;
        };
        // One mail to start the worker threads, then the baseline on a warm service.
        await timed(await createAddress(svc.baseUrl));
        const baseline = await timed(await createAddress(svc.baseUrl));
        // (Their verdicts are not asserted: on a busy machine even they may outlive the 600 ms budget
        // and come out temperror; they are the baseline, nothing more.)
        failing = true;
        const a = await createAddress(svc.baseUrl);
        const elapsed = await timed(a);
        t.diagnostic(`answered in ${Math.round(elapsed)} ms, ${Math.round(baseline)} ms with working DNS (load average ${loadavg()[0]?.toFixed(1)})`);
        assert.ok(
          elapsed - baseline < DEFAULT_DNS_LOOKUP_TIMEOUT_MS,
          `answered in ${Math.round(elapsed)} ms, ${Math.round(elapsed - baseline)} ms more than with working DNS: the 600 ms budget did not hold`,
        );
        const auth = (await onlyEvent(svc, a)).data.authentication;
        assert.equal(auth.summary, 'temperror', JSON.stringify(auth));
        assert.equal(auth.dkim, 'temperror', JSON.stringify(auth));
        assert.equal(auth.dmarc, 'temperror', JSON.stringify(auth));
      } finally {
        await svc.stop();
      }
    });
  }
});

describe('boundedResolver and summarize', () => {
  it('passes answers and "no such name" through, turns anything else into ETIMEOUT', async () => {
    const r = boundedResolver(zoneResolver, 1000, Date.now() + 5000);
    assert.deepEqual(await r(SENDER_DOMAIN, 'TXT'), [['v=spf1 ip4:127.0.0.1 -all']]);
    await assert.rejects(r('missing.example', 'TXT'), { code: 'ENOTFOUND' });
    const failing = boundedResolver(
      async () => {
        throw new Error('boom');
      },
      1000,
      Date.now() + 5000,
    );
    await assert.rejects(failing('x.example', 'TXT'), { code: 'ETIMEOUT' });
    const sync = boundedResolver(
      () => {
        throw new Error('sync boom');
      },
      1000,
      Date.now() + 5000,
    );
    await assert.rejects(sync('x.example', 'TXT'), { code: 'ETIMEOUT' });
  });

  it('times out one lookup, and refuses every lookup once the deadline passed', async () => {
    const hanging = boundedResolver(() => new Promise(() => {}), 50, Date.now() + 5000);
    const t = Date.now();
    await assert.rejects(hanging('slow.example', 'TXT'), { code: 'ETIMEOUT' });
    assert.ok(Date.now() - t < 1000);
    const spent = boundedResolver(zoneResolver, 1000, Date.now() - 1);
    await assert.rejects(spent(SENDER_DOMAIN, 'TXT'), { code: 'ETIMEOUT' });
  });

  it('summary is pass only when DMARC passes', () => {
    assert.equal(summarize('pass', 'pass', 'pass'), 'pass');
    assert.equal(summarize('fail', 'fail', 'pass'), 'pass');
    assert.equal(summarize('pass', 'pass', 'none'), 'none');
    assert.equal(summarize('pass', 'fail', 'none'), 'fail');
    assert.equal(summarize('temperror', 'none', 'none'), 'temperror');
    assert.equal(summarize('softfail', 'neutral', 'none'), 'none');
  });
});
