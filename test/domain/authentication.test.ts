// Bearer authentication has two paths (design.md, "Errors" order: a well-formed bearer, else 401; an
// existing address, else 404; its token, else 401): `authenticate` asks the store, and
// `authenticateNow` answers in the same turn when the store holds the address in memory. Whichever
// path a request takes, the answer must be the same; here every case goes through both, on a real
// store (PostgreSQL holds nothing, so there the fast path must always defer).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import type { ApiError } from '../../src/domain/errors.js';
import type { Store } from '../../src/domain/ports.js';
import { ReturnAddressService } from '../../src/domain/return-address-service.js';
import { openStore } from '../../src/storage/open-store.js';
import { InProcessWakeupHub } from '../../src/wakeup/wakeup-hub.js';
import { createTestStorage, STORE, type TestStorage } from '../helpers.js';

type Outcome = string; // the address id, or the error code

async function viaStore(service: ReturnAddressService, id: string, authorization: string | undefined): Promise<Outcome> {
  return service.authenticate(id, authorization).then(
    (a) => a.id,
    (e: unknown) => (e as ApiError).code,
  );
}

/** undefined when the fast path defers to the store. */
function now(service: ReturnAddressService, id: string, authorization: string | undefined): Outcome | undefined {
  try {
    return service.authenticateNow(id, authorization)?.id;
  } catch (e) {
    return (e as ApiError).code;
  }
}

describe(`authentication, from the store and from memory (${STORE})`, () => {
  let storage: TestStorage;
  let store: Store;
  const hub = new InProcessWakeupHub();
  let config: ReturnType<typeof loadConfig>;
  let clock = Date.now();
  let service: ReturnAddressService;

  before(async () => {
    storage = await createTestStorage();
    config = loadConfig({ ...storage.env, LOG_LEVEL: 'silent' });
    store = await openStore(config);
    service = new ReturnAddressService(store, hub, config, () => clock);
  });
  after(async () => {
    hub.shutdown();
    await store.close();
    await storage.drop();
  });

  it('gives the same answer on both paths, in the documented order', async () => {
    const a = await service.createAddress({ expires_in_seconds: 3600 }, 'test');
    const b = await service.createAddress({}, 'test');
    const bearer = `Bearer ${a.readToken}`;
    const id = a.address.id;
    // Not read since it was created: the fast path defers, and the store answers.
    assert.equal(now(service, id, bearer), undefined);
    assert.equal(await viaStore(service, id, bearer), id);
    const held = STORE === 'sqlite';
    if (held) assert.equal(now(service, id, bearer), id, 'once read, SQLite holds the address and answers at once');
    else assert.equal(now(service, id, bearer), undefined, 'PostgreSQL holds nothing: the store always answers');

    const cases: [string, string, string | undefined, Outcome][] = [
      ['no Authorization header', id, undefined, 'unauthorized'],
      ['another scheme', id, `Basic ${a.readToken}`, 'unauthorized'],
      ['not a read token (the inbox secret)', id, `Bearer ${a.inboxSecret}`, 'unauthorized'],
      ["another address's token", id, `Bearer ${b.readToken}`, 'unauthorized'],
      ['a malformed bearer before an unknown address', `addr_${'0'.repeat(26)}`, 'Bearer nope', 'unauthorized'],
      ['an unknown address', `addr_${'0'.repeat(26)}`, bearer, 'not_found'],
      ['a malformed address id', 'not-an-id', bearer, 'not_found'],
      ['the right token, scheme in lower case', id, `bearer ${a.readToken}`, id],
    ];
    for (const [what, addressId, authorization, expected] of cases) {
      assert.equal(await viaStore(service, addressId, authorization), expected, `from the store: ${what}`);
      const fast = now(service, addressId, authorization);
      // Deferring is always allowed; answering differently never is.
      if (fast !== undefined) assert.equal(fast, expected, `from memory: ${what}`);
      if (held && addressId === id) assert.notEqual(fast, undefined, `SQLite answers from memory: ${what}`);
    }
  });

  it('an address past its grace period, or deleted, is 404 on both paths', async () => {
    const a = await service.createAddress({ expires_in_seconds: 60 }, 'test');
    const bearer = `Bearer ${a.readToken}`;
    const id = a.address.id;
    assert.equal(await viaStore(service, id, bearer), id);
    // Expired but within the grace period: reading still works.
    clock += 61_000;
    assert.equal(await viaStore(service, id, bearer), id);
    if (STORE === 'sqlite') assert.equal(now(service, id, bearer), id);
    // Past the grace period: as good as swept, although the row is still there.
    clock += config.expiredGraceSeconds * 1000;
    assert.equal(await viaStore(service, id, bearer), 'not_found');
    assert.ok([undefined, 'not_found'].includes(now(service, id, bearer)));
    if (STORE === 'sqlite') assert.equal(now(service, id, bearer), 'not_found', 'held, but past grace');
    clock -= 61_000 + config.expiredGraceSeconds * 1000;

    await service.deleteAddress(a.address);
    assert.equal(now(service, id, bearer), undefined, 'a deleted address is no longer held');
    assert.equal(await viaStore(service, id, bearer), 'not_found');
  });
});
