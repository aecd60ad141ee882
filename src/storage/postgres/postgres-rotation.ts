// Credential rotation in PostgreSQL (rotation/rotation-store.ts): one compare-and-set UPDATE of the
// address row. No instance holds address rows in memory (every check reads the row), so from the
// commit on, every instance refuses the old credentials.
import type pg from 'pg';
import type { CredentialColumns, CredentialStore, ReplaceOutcome } from '../../rotation/rotation-store.js';

export class PostgresRotation implements CredentialStore {
  constructor(private readonly pool: pg.Pool) {}

  async replaceCredentials(addressId: string, expected: CredentialColumns, next: CredentialColumns): Promise<ReplaceOutcome> {
    // The second row says whether the address exists when the compare failed, in the same snapshot.
    const r = await this.pool.query<{ replaced: boolean }>(
      `WITH upd AS (
         UPDATE addresses SET read_token_hash = $4, inbox_secret_hash = $5, signing_keys = $6
         WHERE id = $1 AND read_token_hash = $2 AND inbox_secret_hash = $3 RETURNING id
       )
       SELECT EXISTS (SELECT 1 FROM upd) AS replaced FROM addresses WHERE id = $1`,
      [addressId, expected.readTokenHash, expected.inboxSecretHash, next.readTokenHash, next.inboxSecretHash, next.signingKeys],
    );
    const row = r.rows[0];
    return row === undefined ? 'gone' : row.replaced ? 'replaced' : 'changed';
  }
}
