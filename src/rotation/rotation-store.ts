// What credential rotation needs from a store (design.md, "Credential rotation"): the address's two
// credential hashes and its sealed signing keys replaced together, in one statement, only while they
// are still the ones the rotation read. Both stores implement it (storage/*/…-rotation.ts) and
// expose it as `credentials`; no migration: the columns are the address row's own.

export interface CredentialColumns {
  readTokenHash: Buffer;
  inboxSecretHash: Buffer;
  /** The data key of the signing secrets sealed for reader and sender; null for an address older than them. */
  signingKeys: Buffer | null;
}

/** `replaced`; `changed`: the hashes are no longer `expected` (another rotation won); `gone`: no such address. */
export type ReplaceOutcome = 'replaced' | 'changed' | 'gone';

export interface CredentialStore {
  /**
   * Replaces the credential columns with `next` when the stored hashes are still `expected`,
   * durably before resolving. From the moment it resolves (on PostgreSQL: from the commit) no
   * instance accepts the old credentials: every check reads the row, and SQLite's cached row is
   * dropped in the same turn as the update.
   */
  replaceCredentials(addressId: string, expected: CredentialColumns, next: CredentialColumns): Promise<ReplaceOutcome>;
}
