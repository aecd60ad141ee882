// Credential rotation in SQLite (rotation/rotation-store.ts): one compare-and-set UPDATE of the
// address row, and the row cached in memory dropped in the same turn, before anything else runs on
// the event loop, so no request after the update is checked against the old hashes.
import type Database from 'better-sqlite3';
import type { CredentialColumns, CredentialStore, ReplaceOutcome } from '../../rotation/rotation-store.js';

export class SqliteRotation implements CredentialStore {
  private readonly q;

  constructor(
    db: Database.Database,
    private readonly durable: () => Promise<void>,
    /** Drops the address's cached row (sqlite-read-cache.ts). */
    private readonly forgetAddress: (addressId: string) => void,
  ) {
    this.q = {
      replace: db.prepare<[{ id: string; oldRead: Buffer; oldInbox: Buffer; read: Buffer; inbox: Buffer; keys: Buffer | null }]>(
        `UPDATE addresses SET read_token_hash = @read, inbox_secret_hash = @inbox, signing_keys = @keys
         WHERE id = @id AND read_token_hash = @oldRead AND inbox_secret_hash = @oldInbox`,
      ),
      exists: db.prepare<[string], number>('SELECT 1 FROM addresses WHERE id = ?').pluck(),
    };
  }

  async replaceCredentials(addressId: string, expected: CredentialColumns, next: CredentialColumns): Promise<ReplaceOutcome> {
    const changes = this.q.replace.run({
      id: addressId,
      oldRead: expected.readTokenHash,
      oldInbox: expected.inboxSecretHash,
      read: next.readTokenHash,
      inbox: next.inboxSecretHash,
      keys: next.signingKeys,
    }).changes;
    this.forgetAddress(addressId);
    if (changes === 0) return this.q.exists.get(addressId) === undefined ? 'gone' : 'changed';
    await this.durable();
    return 'replaced';
  }
}
