// Credential rotation in PostgreSQL (rotation/rotation-store.ts): one compare-and-set UPDATE of the
// address row. No instance holds address rows in memory (every check reads the row), so from the
// commit on, every instance refuses the old credentials. A replaced read token is also NOTIFYed on
// the change channel, in the same statement (so at commit, and only if it commits): every
// instance's hub ends the waits opened with it (design.md, "Credential rotation").
import type pg from 'pg';
import { TOKEN_IDENTITY_RE, tokenIdentity } from '../../domain/credentials.js';
import type { CredentialColumns, CredentialStore, ReplaceOutcome } from '../../rotation/rotation-store.js';

/** The change channel's payload for a rotated read token: `<address id> rotated <identity>`. */
export const rotatedPayload = (addressId: string, oldReadTokenHash: Buffer) => `${addressId} rotated ${tokenIdentity(oldReadTokenHash)}`;

/** A rotation's payload read back; undefined for any other (an address id). */
export function parseRotated(payload: string): { addressId: string; identity: string } | undefined {
  const [addressId, kind, identity, ...rest] = payload.split(' ');
  if (kind !== 'rotated' || addressId === undefined || identity === undefined || rest.length > 0 || !TOKEN_IDENTITY_RE.test(identity)) return undefined;
  return { addressId, identity };
}

export class PostgresRotation implements CredentialStore {
  constructor(
    private readonly pool: pg.Pool,
    /** The change channel (postgres-store.ts, CHANGE_CHANNEL). */
    private readonly channel: string,
  ) {}

  async replaceCredentials(addressId: string, expected: CredentialColumns, next: CredentialColumns): Promise<ReplaceOutcome> {
    const rotatesReadToken = !expected.readTokenHash.equals(next.readTokenHash);
    // The second row says whether the address exists when the compare failed, in the same snapshot.
    // `sig` runs only when referenced, and sends only when the update happened and replaced the read token.
    const r = await this.pool.query<{ replaced: boolean }>(
      `WITH upd AS (
         UPDATE addresses SET read_token_hash = $4, inbox_secret_hash = $5, signing_keys = $6
         WHERE id = $1 AND read_token_hash = $2 AND inbox_secret_hash = $3 RETURNING id
       ), sig AS (
         SELECT pg_notify($7, $8) FROM upd WHERE $8::text IS NOT NULL
       )
       SELECT EXISTS (SELECT 1 FROM upd) AS replaced, (SELECT count(*) FROM sig) AS signalled FROM addresses WHERE id = $1`,
      [
        addressId,
        expected.readTokenHash,
        expected.inboxSecretHash,
        next.readTokenHash,
        next.inboxSecretHash,
        next.signingKeys,
        this.channel,
        rotatesReadToken ? rotatedPayload(addressId, expected.readTokenHash) : null,
      ],
    );
    const row = r.rows[0];
    return row === undefined ? 'gone' : row.replaced ? 'replaced' : 'changed';
  }
}
