// A sender policy on mail, end to end over real SMTP with DNS answered offline (as in
// test/email/sender-authentication.test.ts): a spoofed mail (From an allowed domain, no DMARC pass)
// is answered 250 and stored quarantined, skipped by default reads, long-polls, streams, MCP reads
// and waits, claims and consumers, listed by state=quarantined, released and then read; `dkim`
// counts only a signature whose d= is the From domain. Beside it, the liveness probe while many
// of the largest policies are written at once.
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { dkimSign } from 'mailauth';
import type { DnsResolver } from '../../src/email/sender-authentication.js';
import { sendRaw } from '../email/smtp-client.js';
import { type Addr, api, createAddress, listEvents, startTestService, type TestService } from '../helpers.js';
import { LIVENESS_MS, startLivenessProbe } from '../liveness-probe.js';
import { openStream } from '../sse-client.js';

const DOMAIN = 'mail.example.test';
const SENDER_DOMAIN = 'sender.example';
const SELECTOR = 'ra2024';
const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const PRIVATE_PEM = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const TXT: Record<string, string> = {
  [`${SELECTOR}._domainkey.${SENDER_DOMAIN}`]: `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`,
  [SENDER_DOMAIN]: 'v=spf1 ip4:127.0.0.1 -all',
  [`_dmarc.${SENDER_DOMAIN}`]: 'v=DMARC1; p=reject',
};
const zoneResolver: DnsResolver = async (name, rrtype) => {
  const txt = rrtype === 'TXT' ? TXT[name.toLowerCase()] : undefined;
  if (txt === undefined) throw Object.assign(new Error(`query ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
  return [txt.match(/.{1,255}/g) ?? []];
};

function message(to: string, from: string, subject: string): string {
  return [
    `From: Sender <${from}>`,
    `To: ${to}`,
    `Subject: ${subject}`,
    'Date: Tue, 01 Oct 2024 10:00:00 +0000',
    `Message-ID: <${randomUUID()}@${SENDER_DOMAIN}>`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'Your code is 482913.',
    '',
  ].join('\r\n');
}

async function signed(raw: string): Promise<string> {
  const options = { signatureData: [{ signingDomain: SENDER_DOMAIN, selector: SELECTOR, privateKey: PRIVATE_PEM }] };
  const result = await dkimSign(raw, options as never);
  assert.deepEqual(result.errors, []);
  return result.signatures + raw;
}

describe('sender policy on mail, over SMTP', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ EMAIL_DOMAIN: DOMAIN }, undefined, { dnsResolver: zoneResolver });
  });
  after(() => svc.stop());

  const putPolicy = (a: Addr, json: unknown) => api(svc.baseUrl, 'PUT', `/api/v1/addresses/${a.id}/sender-policy`, { json, token: a.token });
  /** A mail whose envelope is another domain and which carries no signature: DMARC for the From domain fails. */
  const spoof = (a: Addr, subject: string) =>
    sendRaw(svc.smtpPort, { from: 'bounce@elsewhere.example', rcpts: [a.email], message: message(a.email, `alerts@${SENDER_DOMAIN}`, subject) });
  const genuine = async (a: Addr, subject: string, from = `alerts@${SENDER_DOMAIN}`) =>
    sendRaw(svc.smtpPort, { from: `bounces@${SENDER_DOMAIN}`, rcpts: [a.email], message: await signed(message(a.email, from, subject)) });

  it('a spoofed mail is quarantined and skipped by every default reader until released', async () => {
    const a = await createAddress(svc.baseUrl);
    assert.equal((await putPolicy(a, { email: { allow: [SENDER_DOMAIN], require: 'dmarc' } })).status, 200);

    // Readers that wait from the start: a long-poll, a stream, an MCP wait.
    const poll = listEvents(svc.baseUrl, a, { wait: 20 });
    const stream = await openStream(`${svc.baseUrl}/api/v1/addresses/${a.id}/events/stream`, { authorization: `Bearer ${a.token}` });
    const mcp = new Client({ name: 'sender-policy-test', version: '0.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(a.mcpUrl), { requestInit: { headers: { Authorization: `Bearer ${a.token}` } } }));
    const call = async (name: string, args: Record<string, unknown> = {}) => {
      const r = (await mcp.callTool({ name, arguments: args })) as CallToolResult;
      assert.notEqual(r.isError, true, JSON.stringify(r.content));
      return r.structuredContent as any;
    };
    const waiting = call('wait_for_event', { timeout: 20 });

    const s = await spoof(a, 'spoofed');
    assert.equal(s.final?.code, 250, 'never bounced');
    const g = await genuine(a, 'genuine');
    assert.equal(g.final?.code, 250);

    const polled = await poll;
    assert.deepEqual(
      polled.json.events.map((e: any) => [e.sequence, e.data.subject]),
      [[2, 'genuine']],
      'the long-poll woke for the genuine mail only',
    );
    const [frame] = await stream.waitForMessages(1);
    assert.equal(JSON.parse(frame!.data).sequence, 2, 'the stream skipped the quarantined one');
    stream.close();
    const waited = await waiting;
    assert.equal(waited.event.sequence, 2, 'so did the MCP wait');
    assert.equal(waited.next_cursor, 2);
    assert.deepEqual(
      (await call('list_events', {})).events.map((e: any) => e.sequence),
      [2],
    );

    const listed = await listEvents(svc.baseUrl, a, { state: 'quarantined' });
    assert.equal(listed.json.events.length, 1);
    const held = listed.json.events[0];
    assert.equal(held.sequence, 1);
    assert.equal(held.data.subject, 'spoofed');
    assert.equal(held.trust.verified, false);
    assert.equal(held.trust.ingress, 'email');
    assert.match(held.trust.reason, /email\.require=dmarc.*fail/);
    assert.ok(held.quarantined_at);
    assert.deepEqual(
      (await call('list_events', { state: 'quarantined' })).events.map((e: any) => e.sequence),
      [1],
    );
    const genuineEvent = (await listEvents(svc.baseUrl, a)).json.events[0];
    assert.equal(genuineEvent.trust.verified, true);
    assert.equal(genuineEvent.quarantined_at, undefined);

    const claim = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/claims`, { json: { max: 10 }, token: a.token });
    assert.deepEqual(
      claim.json.claims.map((c: any) => c.event.sequence),
      [2],
    );
    const consumer = await listEvents(svc.baseUrl, a, { consumer: 'inbox-reader' });
    assert.deepEqual(
      consumer.json.events.map((e: any) => e.sequence),
      [2],
    );

    // Released through MCP, then read by a default reader from the start.
    const released = await call('release_event', { event_id: held.id });
    assert.ok(released.event.released_at);
    assert.deepEqual(
      (await listEvents(svc.baseUrl, a)).json.events.map((e: any) => e.sequence),
      [1, 2],
    );
    assert.deepEqual((await listEvents(svc.baseUrl, a, { state: 'quarantined' })).json.events, []);
    assert.equal((await call('get_sender_policy')).sender_policy.email.require, 'dmarc');
    await mcp.close();
  });

  it('require dkim counts only a passing signature with d= the From domain; the allow list names addresses exactly', async () => {
    const a = await createAddress(svc.baseUrl);
    assert.equal((await putPolicy(a, { email: { allow: [`alice@${SENDER_DOMAIN}`], require: 'dkim' } })).status, 200);
    assert.equal((await genuine(a, 'from alice', `alice@${SENDER_DOMAIN}`)).final?.code, 250);
    assert.equal((await genuine(a, 'from bob', `bob@${SENDER_DOMAIN}`)).final?.code, 250);
    assert.equal((await spoof(a, 'unsigned alice')).final?.code, 250);
    const all = (await listEvents(svc.baseUrl, a, { state: 'all' })).json.events;
    assert.deepEqual(
      all.map((e: any) => [e.data.subject, e.quarantined_at !== undefined]),
      [
        ['from alice', false],
        ['from bob', true],
        ['unsigned alice', true],
      ],
    );
    assert.match(all[1].trust.reason, /email\.allow/);
    assert.match(all[2].trust.reason, /email\.allow/, 'alerts@ is not alice@');
    assert.equal((await putPolicy(a, { email: { allow: [SENDER_DOMAIN], require: 'dkim' } })).status, 200);
    assert.equal((await spoof(a, 'unsigned, domain allowed')).final?.code, 250);
    const last = (await listEvents(svc.baseUrl, a, { state: 'quarantined', after: 3 })).json.events;
    assert.equal(last.length, 1);
    assert.match(last[0].trust.reason, /email\.require=dkim/);
  });

  it('many of the largest policies written at once: each answered, /healthz within 1 s throughout', async () => {
    const addresses = await Promise.all(Array.from({ length: 20 }, () => createAddress(svc.baseUrl)));
    const allow = Array.from({ length: 100 }, (_, i) => `${'x'.repeat(60)}${i}@${'d'.repeat(60)}.${'e'.repeat(60)}.example.org`);
    const probe = startLivenessProbe(svc.baseUrl);
    const answers = await Promise.all(addresses.flatMap((a) => [putPolicy(a, { email: { allow } }), putPolicy(a, { email: { allow, require: 'dkim' } })]));
    const { maxMs, failures } = await probe.stop();
    for (const r of answers) assert.equal(r.status, 200, r.text);
    assert.deepEqual(failures, []);
    assert.ok(maxMs < LIVENESS_MS, `healthz answered within ${LIVENESS_MS} ms (slowest ${Math.round(maxMs)} ms)`);
  });
});
