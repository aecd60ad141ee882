#!/usr/bin/env node
// Sends one request of each kind the capture URL knows (GitHub and its retry, Stripe, Slack handshake
// and event, Standard Webhooks, an OAuth redirect, Meta and Graph handshakes, broken JSON) to a new
// address, signed with secrets set through PUT signing-secrets, then prints each answer and the
// events stored. Usage: node scripts/probes/capture-providers.mjs http://127.0.0.1:3000
import { createHmac } from 'node:crypto';

const base = process.argv[2] ?? 'http://127.0.0.1:3000';
const c = await fetch(`${base}/api/v1/addresses`, { method: 'POST' }).then((r) => r.json());
const hook = c.endpoints.hook_url,
  token = c.credentials.read_token,
  id = c.address.id;
const hmac = (k, t) => createHmac('sha256', k).update(t).digest('hex');
const put = await fetch(`${base}/api/v1/addresses/${id}/signing-secrets`, {
  method: 'PUT',
  headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
  body: JSON.stringify({
    github: 'gh-secret',
    stripe: 'whsec_stripe_test',
    slack: 'slack-secret',
    standard_webhooks: `whsec_${Buffer.from('k'.repeat(32)).toString('base64')}`,
  }),
});
console.log('PUT signing-secrets ->', put.status, await put.text());
const now = Math.floor(Date.now() / 1000);
const reqs = [];
const gh = JSON.stringify({ action: 'closed', pull_request: { number: 42, merged: true } });
reqs.push([
  'GitHub pull_request',
  `${hook}/github`,
  {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-github-event': 'pull_request',
      'x-github-delivery': 'd1c5a0e2-0000-4000-8000-000000000042',
      'x-hub-signature-256': `sha256=${hmac('gh-secret', gh)}`,
    },
    body: gh,
  },
]);
reqs.push([
  'GitHub retry (same delivery)',
  `${hook}/github`,
  {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-github-event': 'pull_request',
      'x-github-delivery': 'd1c5a0e2-0000-4000-8000-000000000042',
      'x-hub-signature-256': `sha256=${hmac('gh-secret', gh)}`,
    },
    body: gh,
  },
]);
const st = JSON.stringify({ id: 'evt_1PqR2s', object: 'event', type: 'checkout.session.completed', data: { object: { amount_total: 2000 } } });
reqs.push([
  'Stripe',
  hook,
  { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': `t=${now},v1=${hmac('whsec_stripe_test', `${now}.${st}`)}` }, body: st },
]);
reqs.push([
  'Slack url_verification',
  hook,
  { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type: 'url_verification', token: 't', challenge: 'ch4ll3nge' }) },
]);
const sl = JSON.stringify({ type: 'event_callback', team_id: 'T1', event: { type: 'app_mention', text: 'hi' } });
reqs.push([
  'Slack event_callback',
  hook,
  {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-slack-request-timestamp': String(now),
      'x-slack-signature': `v0=${hmac('slack-secret', `v0:${now}:${sl}`)}`,
    },
    body: sl,
  },
]);
const sw = JSON.stringify({ type: 'invoice.paid', data: { id: 'inv_1' } });
reqs.push([
  'Standard Webhooks',
  hook,
  {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(now),
      'webhook-signature':
        'v1,' +
        createHmac('sha256', Buffer.from('k'.repeat(32)))
          .update(`msg_1.${now}.${sw}`)
          .digest('base64'),
    },
    body: sw,
  },
]);
reqs.push(['OAuth redirect (browser)', `${hook}/oauth?code=4%2F0Aea&state=s-1`, { headers: { accept: 'text/html,application/xhtml+xml' } }]);
reqs.push(['Meta hub.challenge', `${hook}?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=x`, {}]);
reqs.push(['Graph validationToken', `${hook}?validationToken=abc123`, { method: 'POST' }]);
reqs.push(['broken JSON', hook, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":' }]);
for (const [label, url, init] of reqs) {
  const r = await fetch(url, init);
  const t = await r.text();
  console.log(
    `${label}: ${init.method ?? 'GET'} -> ${r.status} ${r.headers.get('content-type')?.split(';')[0]} ${t.length > 90 ? `${t.slice(0, 60)}…(${t.length} chars)` : t}`,
  );
}
const ev = await fetch(`${c.endpoints.events_url}?limit=100`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.json());
for (const e of ev.events)
  console.log(
    `  #${e.sequence} ${e.type} / ${e.source} key=${e.dedupe_key ?? '-'} path=${JSON.stringify(e.data.path)} query=${JSON.stringify(e.data.query)} body=${JSON.stringify(e.data.body)?.slice(0, 60)} raw=${e.data.raw.size}B/${e.data.raw.encoding} signature=${e.data.signature.scheme}:${e.data.signature.verified}`,
  );
