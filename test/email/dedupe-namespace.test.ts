// A mail's Message-ID and an HTTP idempotency key live in separate key spaces: an
// unauthenticated mail naming the key a sender will use cannot pre-empt, and so suppress, that
// sender's delivery. The email event still shows its Message-ID as dedupe_key, and an MTA retry of
// the same mail still creates nothing.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { api, createAddress, deliver, listEvents, STORE, startTestService, type TestService } from '../helpers.js';
import { sendRaw, simpleMessage } from './smtp-client.js';

describe(`email and HTTP idempotency keys are apart (${STORE})`, () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(() => svc.stop());

  it('a mail cannot pre-empt an HTTP key, and an HTTP key cannot pre-empt a mail', async () => {
    const a = await createAddress(svc.baseUrl);
    const mail = (id: string) => sendRaw(svc.smtpPort, { from: 'x@example.org', rcpts: [a.email], message: simpleMessage({ to: a.email, messageId: id }) });
    assert.equal((await mail('<pay-981@attacker.example>')).final?.code, 250);
    const http = await deliver(svc.baseUrl, a, { type: 'payment.succeeded' }, 'pay-981@attacker.example');
    assert.equal(http.status, 202, 'the real delivery is stored, not answered as a duplicate of the mail');
    assert.equal(http.json.duplicate, false);

    const key = 'order-5@shop.example';
    assert.equal((await deliver(svc.baseUrl, a, { type: 'order' }, key)).status, 202);
    assert.equal((await mail(`<${key}>`)).final?.code, 250);
    assert.equal((await mail(`<${key}>`)).final?.code, 250, 'an MTA retry is accepted');

    const events = (await listEvents(svc.baseUrl, a)).json.events as { type: string; dedupe_key: string }[];
    assert.deepEqual(
      events.map((e) => [e.type, e.dedupe_key]),
      [
        ['email.received', 'pay-981@attacker.example'],
        ['payment.succeeded', 'pay-981@attacker.example'],
        ['order', key],
        ['email.received', key],
      ],
      'one event each; email events show their Message-ID',
    );
  });

  it('an HTTP key with a control character is refused, so it can never imitate an email key', async () => {
    const a = await createAddress(svc.baseUrl);
    const r = await api(svc.baseUrl, 'POST', a.inboxUrl, { json: { dedupe_key: '\u0001email:x@y' } });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.code, 'invalid_request');
    assert.match(r.json.error.message, /dedupe_key.*control characters/);
  });
});
