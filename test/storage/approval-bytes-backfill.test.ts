// Approvals stored before they counted toward the byte quota are counted by migration 0017 (both
// stores): an address and its approval are written into a database migrated up to 0016, then the
// store opens it (which applies 0017), and the address's quota holds the approval's bytes exactly
// as approval-model.ts's approvalBytes counts them.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import { type ApprovalRecord, approvalBytes } from '../../src/approvals/approval-model.js';
import { newApprovalId } from '../../src/approvals/approval-rules.js';
import { loadConfig } from '../../src/config.js';
import { hashSecret, newAddressId, newEventId, newInboxSecret, newReadToken, newSlug } from '../../src/domain/credentials.js';
import { INBOX_TRUST_JSON } from '../../src/domain/trust.js';
import { APPROVAL_COLUMNS, approvalValues } from '../../src/storage/approval-rows.js';
import { readMigrations } from '../../src/storage/migration-files.js';
import { type OpenedStore, openStore, SQLITE_FILE } from '../../src/storage/open-store.js';
import { createTestStorage, STORE, type TestStorage } from '../helpers.js';

const OLD = readMigrations(`src/storage/${STORE}/migrations`).filter((m) => m.version < 17);
const ADDRESS_COLUMNS = 'id, slug, name, task_id, read_token_hash, inbox_secret_hash, created_at, expires_at';

function approvalOf(addressId: string): ApprovalRecord {
  const now = Date.now();
  return {
    id: newApprovalId(),
    addressId,
    secretHash: hashSecret('aa_approve_old'),
    question: 'Stored before approvals counted: ¿sí?',
    details: 'x'.repeat(3000),
    options: [
      { id: 'approve', label: 'Approve' },
      { id: 'deny', label: 'Deny' },
    ],
    fields: [{ name: 'why', label: 'Why', type: 'text', required: false }],
    maxResponses: 1,
    responses: 0,
    status: 'pending',
    createdAt: now,
    expiresAt: now + 3_600_000,
    closedAt: null,
  };
}

async function writeOldDatabase(storage: TestStorage, approval: ApprovalRecord): Promise<void> {
  const now = Date.now();
  const address = [approval.addressId, newSlug(), 'old', null, hashSecret(newReadToken()), hashSecret(newInboxSecret()), now, now + 3_600_000];
  const marks = (n: number, pg: boolean) => Array.from({ length: n }, (_, i) => (pg ? `$${i + 1}` : '?')).join(', ');
  const values = approvalValues(approval);
  if (STORE === 'sqlite') {
    const db = new Database(join(storage.dataDir, SQLITE_FILE));
    try {
      db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT');
      for (const m of OLD) {
        db.exec(m.sql);
        db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(m.version, m.name, Date.now());
      }
      db.prepare(`INSERT INTO addresses (${ADDRESS_COLUMNS}) VALUES (${marks(8, false)})`).run(...address);
      db.prepare(`INSERT INTO approvals (${APPROVAL_COLUMNS}) VALUES (${marks(values.length, false)})`).run(...values);
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
    await client.query(`INSERT INTO addresses (${ADDRESS_COLUMNS}) VALUES (${marks(8, true)})`, address);
    await client.query(`INSERT INTO approvals (${APPROVAL_COLUMNS}) VALUES (${marks(values.length, true)})`, values);
  } finally {
    await client.end();
  }
}

describe(`migration 0017 counts the approvals stored before it (${STORE})`, () => {
  let storage: TestStorage;
  let store: OpenedStore;
  const approval = approvalOf(newAddressId());

  before(async () => {
    storage = await createTestStorage();
    await writeOldDatabase(storage, approval);
    store = await openStore(loadConfig(storage.env));
  });
  after(async () => {
    await store?.close();
    await storage?.drop();
  });

  it("the old approval's bytes hold the quota: what is left takes an event of exactly its size, not one byte more", async () => {
    const size = approvalBytes(approval);
    const limits = { maxEventsPerAddress: 100, maxBytesPerAddress: size + 100 };
    const event = (bytes: number) => ({
      id: newEventId(),
      addressId: approval.addressId,
      type: 't',
      source: 's',
      data: JSON.stringify({ p: 'x'.repeat(bytes - 8) }),
      metadata: null,
      dedupeKey: null,
      trust: INBOX_TRUST_JSON,
      createdAt: Date.now(),
    });
    assert.equal((await store.appendEvent(event(101), limits)).kind, 'queue_full', 'the approval is counted');
    assert.equal((await store.appendEvent(event(100), limits)).kind, 'created', 'and counted once, to the byte');
    assert.equal((await store.getApproval(approval.id))?.approval.question, approval.question);
  });
});
