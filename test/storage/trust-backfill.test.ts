// Events stored before trust existed get it from what the service itself recorded (migration 0012,
// both stores): rows are written the old way into a database migrated up to 0011, then the store
// opens it (which applies 0012) and reads them. Only what proves the way in counts: a key in the
// email or approval namespace (no inbox key can hold a control character), or bytes stored beside
// the event; a capture's or a mail's shape without that proof may be an inbox forgery.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { hashSecret, newAddressId, newEventId, newInboxSecret, newReadToken, newSlug } from '../../src/domain/credentials.js';
import { parseEventFilter } from '../../src/domain/event-filter.js';
import type { Store } from '../../src/domain/ports.js';
import { readMigrations } from '../../src/storage/migration-files.js';
import { openStore, SQLITE_FILE } from '../../src/storage/open-store.js';
import { createTestStorage, STORE, type TestStorage } from '../helpers.js';
import { PAGE_BYTES } from './store-records.js';

const OLD = readMigrations(`src/storage/${STORE}/migrations`).filter((m) => m.version < 12);
const LEGACY_REASON =
  'stored before this service recorded provenance, by a way in it cannot tell now: treated as an inbox delivery, nothing about the sender was checked';
const legacyInbox = { ingress: 'inbox', verified: null, method: null, identity: null, reason: LEGACY_REASON };

interface OldRow {
  type: string;
  source: string;
  data: unknown;
  dedupeKey: string | null;
  blob?: true;
  expect: Record<string, unknown>;
}

const captureData = (verified: boolean | null) => ({
  method: 'POST',
  headers: { 'x-github-delivery': 'd-1' },
  remote_ip: '192.0.2.1',
  signature: { scheme: 'github', verified, reason: verified ? 'X-Hub-Signature-256 matches the HMAC-SHA256 of the body' : 'no github secret' },
});

const ROWS: OldRow[] = [
  {
    type: 'stripe.checkout.session.completed',
    source: 'stripe',
    data: { signature: { scheme: 'stripe', verified: true }, remote_ip: '192.0.2.1' },
    dedupeKey: 'stripe:evt_1',
    expect: legacyInbox,
  },
  {
    type: 'email.received',
    source: 'email',
    data: { from: { address: 'Alice@Example.COM' }, authentication: { spf: 'pass', dkim: 'pass', dmarc: 'pass', summary: 'pass' } },
    dedupeKey: '\u0001email:m1@example.com',
    expect: { ingress: 'email', verified: true, method: 'dmarc', identity: 'example.com', reason: null },
  },
  {
    type: 'email.received',
    source: 'email',
    data: { from: { address: 'ceo@bank.example' }, authentication: { spf: 'fail', dkim: 'none', dmarc: 'fail', summary: 'fail' } },
    dedupeKey: '\u0001email:m2@example.com',
    expect: { ingress: 'email', verified: false, method: 'dmarc', identity: null, reason: 'DMARC result is fail, not pass: the From address is not proven' },
  },
  {
    type: 'email.received',
    source: 'email',
    data: { from: { address: 'a@b.example' }, authentication: { spf: 'none', dkim: 'none', dmarc: 'none', summary: 'none' } },
    dedupeKey: '\u0001email:m3@example.com',
    expect: { ingress: 'email', verified: null, method: null, identity: null, reason: 'DMARC result is none, not pass: the From address is not proven' },
  },
  {
    // A mail's whole shape, sent to the inbox URL: nothing proves it came by SMTP.
    type: 'email.received',
    source: 'email',
    data: { from: { address: 'ceo@bank.example' }, authentication: { spf: 'pass', dkim: 'pass', dmarc: 'pass', summary: 'pass' } },
    dedupeKey: 'm4@example.com',
    expect: legacyInbox,
  },
  {
    type: 'approval.decided',
    source: 'approval',
    data: { approval_id: 'apv_1', option: 'yes' },
    dedupeKey: '\u0001approval:apv_1:1',
    expect: { ingress: 'approval', verified: true, method: 'approval_link', identity: null, reason: null },
  },
  {
    type: 'approval.expired',
    source: 'approval',
    data: { approval_id: 'apv_2' },
    dedupeKey: '\u0001approval:apv_2:expired',
    expect: { ingress: 'service', verified: true, method: null, identity: null, reason: null },
  },
  {
    type: 'github.push',
    source: 'github',
    data: captureData(true),
    dedupeKey: 'github:d-1',
    blob: true,
    expect: { ingress: 'capture', verified: true, method: 'github', identity: 'github', reason: null },
  },
  {
    type: 'github.push',
    source: 'github',
    data: captureData(null),
    dedupeKey: null,
    blob: true,
    expect: { ingress: 'capture', verified: null, method: 'github', identity: null, reason: 'no github secret' },
  },
  {
    // A capture's shape without bytes beside it: an inbox sender can write exactly this.
    type: 'github.push',
    source: 'github',
    data: captureData(true),
    dedupeKey: 'github:d-2',
    expect: legacyInbox,
  },
  { type: 'message.received', source: 'https', data: { hello: 'world' }, dedupeKey: null, expect: legacyInbox },
];

const ADDRESS_COLUMNS = 'id, slug, name, task_id, read_token_hash, inbox_secret_hash, created_at, expires_at, last_sequence, event_count';
const EVENT_COLUMNS = 'address_id, sequence, id, type, source, data, metadata, dedupe_key, created_at, acknowledged_at';
const BLOB_COLUMNS = 'address_id, sequence, name, content_type, sha256, size, bytes';

function oldValues(addressId: string) {
  const now = Date.now();
  const address = [addressId, newSlug(), 'old', null, hashSecret(newReadToken()), hashSecret(newInboxSecret()), now, now + 3_600_000, ROWS.length, ROWS.length];
  const events = ROWS.map((r, i) => [addressId, i + 1, newEventId(now), r.type, r.source, JSON.stringify(r.data), null, r.dedupeKey, now, null]);
  const blobs = ROWS.flatMap((r, i) => (r.blob ? [[addressId, i + 1, 'raw', 'application/json', '0'.repeat(64), 2, Buffer.from('{}')]] : []));
  return { address, events, blobs };
}

/** A database at migration 0011 holding ROWS, written as the release before trust wrote them. */
async function writeOldDatabase(storage: TestStorage, addressId: string): Promise<void> {
  const { address, events, blobs } = oldValues(addressId);
  const marks = (n: number, pg: boolean) => Array.from({ length: n }, (_, i) => (pg ? `$${i + 1}` : '?')).join(', ');
  if (STORE === 'sqlite') {
    const db = new Database(join(storage.dataDir, SQLITE_FILE));
    try {
      db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT');
      for (const m of OLD) {
        db.exec(m.sql);
        db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(m.version, m.name, Date.now());
      }
      db.prepare(`INSERT INTO addresses (${ADDRESS_COLUMNS}) VALUES (${marks(10, false)})`).run(...address);
      for (const e of events) db.prepare(`INSERT INTO events (${EVENT_COLUMNS}) VALUES (${marks(10, false)})`).run(...e);
      for (const b of blobs) db.prepare(`INSERT INTO event_blobs (${BLOB_COLUMNS}) VALUES (${marks(7, false)})`).run(...b);
    } finally {
      db.close();
    }
    return;
  }
  const client = new pg.Client({ connectionString: storage.databaseUrl });
  await client.connect();
  try {
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())',
    );
    for (const m of OLD) {
      await client.query(m.sql);
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
    }
    await client.query(`INSERT INTO addresses (${ADDRESS_COLUMNS}) VALUES (${marks(10, true)})`, address);
    for (const e of events) await client.query(`INSERT INTO events (${EVENT_COLUMNS}) VALUES (${marks(10, true)})`, e);
    for (const b of blobs) await client.query(`INSERT INTO event_blobs (${BLOB_COLUMNS}) VALUES (${marks(7, true)})`, b);
  } finally {
    await client.end();
  }
}

describe(`migration 0012 gives old events their trust (${STORE})`, () => {
  let storage: TestStorage;
  let store: Store;
  const addressId = newAddressId();

  before(async () => {
    storage = await createTestStorage();
    await writeOldDatabase(storage, addressId);
    store = await openStore(loadConfig({ ...storage.env, BASE_URL: 'http://127.0.0.1:1' }));
  });
  after(async () => {
    await store?.close();
    await storage?.drop();
  });

  it('each old event reads with the trust its recorded way in proves, and nothing more', async () => {
    const page = await store.listEvents(addressId, 0, 100, PAGE_BYTES);
    assert.ok(page);
    assert.equal(page.events.length, ROWS.length);
    page.events.forEach((e, i) => {
      assert.deepEqual(JSON.parse(e.trust), ROWS[i]!.expect, `row ${i + 1} (${ROWS[i]!.type}, key ${JSON.stringify(ROWS[i]!.dedupeKey)})`);
    });
  });

  it('match=trust.verified=true keeps exactly the proven ones, evaluated by the store', async () => {
    const scan = await store.scanEvents(addressId, 0, parseEventFilter({ match: ['trust.verified=true'] }), 100, PAGE_BYTES);
    assert.ok(scan);
    const expected = ROWS.flatMap((r, i) => (r.expect.verified === true ? [i + 1] : []));
    assert.deepEqual(
      scan.events.map((e) => e.sequence),
      expected,
    );
    const inbox = await store.scanEvents(addressId, 0, parseEventFilter({ match: ['trust.ingress=inbox', 'trust.verified=null'] }), 100, PAGE_BYTES);
    assert.deepEqual(
      inbox?.events.map((e) => e.sequence),
      ROWS.flatMap((r, i) => (r.expect.ingress === 'inbox' ? [i + 1] : [])),
    );
  });
});
