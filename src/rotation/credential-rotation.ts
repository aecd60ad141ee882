// Credential rotation (design.md, "Credential rotation"): a leaked inbox URL or read token is
// replaced without a new address. The reader (bearer) asks for a new inbox secret, a new read token
// or both; the address, its email address and its queue stay; the signing secrets stay readable,
// because their data key is sealed again under the new credentials (domain/signing-keys.ts).
import { hashSecret, newInboxSecret, newReadToken } from '../domain/credentials.js';
import { notFound } from '../domain/errors.js';
import type { AddressRecord } from '../domain/model.js';
import { resealSigningKeys } from '../domain/signing-keys.js';
import type { CredentialStore } from './rotation-store.js';

export interface RotationRequest {
  readToken: boolean;
  inboxSecret: boolean;
}

export interface Rotated {
  /** The new read token, when it was rotated (shown once). */
  readToken?: string;
  /** The new inbox secret, when it was rotated (shown once, inside the inbox and capture URLs). */
  inboxSecret?: string;
}

/** Reads the address afresh and checks the reader's token against it (the service's authenticate). */
export type Authenticate = (addressId: string, authorization: string | undefined) => Promise<AddressRecord>;

/**
 * Told after a rotation replaced the read token whose hash is `oldReadTokenHash`: this instance's
 * waits opened with it end now (the hub's tokenRevoked); other instances hear it from the store
 * (PostgreSQL: a NOTIFY in the rotation's own statement).
 */
export type ReadTokenRotated = (addressId: string, oldReadTokenHash: Buffer) => void;

export class CredentialRotation {
  constructor(
    private readonly store: CredentialStore,
    private readonly authenticate: Authenticate,
    private readonly readTokenRotated: ReadTokenRotated = () => {},
  ) {}

  /**
   * Rotates what `what` asks for, with `readToken` being the caller's current token (already
   * checked by the route's guard). A concurrent rotation that wins first is read back: when it
   * replaced the caller's token, the caller is refused (401), as any request with that token now is.
   */
  async rotate(address: AddressRecord, readToken: string, what: RotationRequest): Promise<Rotated> {
    let current = address;
    // A rotation that loses the compare to a concurrent one reads the row again and tries again:
    // each loss means another rotation of the same address succeeded, so this ends.
    for (;;) {
      const rotated: Rotated = {};
      if (what.readToken) rotated.readToken = newReadToken();
      if (what.inboxSecret) rotated.inboxSecret = newInboxSecret();
      const signingKeys = current.signingKeys && resealSigningKeys(current.signingKeys, current.id, readToken, rotated);
      // The token was checked against its hash already; a key that does not open is a corrupt row.
      if (current.signingKeys !== null && signingKeys === null) throw new Error(`the signing keys of ${current.id} do not open with its read token`);
      const outcome = await this.store.replaceCredentials(
        current.id,
        { readTokenHash: current.readTokenHash, inboxSecretHash: current.inboxSecretHash, signingKeys: current.signingKeys },
        {
          readTokenHash: rotated.readToken === undefined ? current.readTokenHash : hashSecret(rotated.readToken),
          inboxSecretHash: rotated.inboxSecret === undefined ? current.inboxSecretHash : hashSecret(rotated.inboxSecret),
          signingKeys,
        },
      );
      if (outcome === 'replaced') {
        // Waits opened with the old token end before the answer (design.md, "Credential rotation").
        if (rotated.readToken !== undefined) this.readTokenRotated(current.id, current.readTokenHash);
        return rotated;
      }
      if (outcome === 'gone') throw notFound('Address');
      // Refused (401) here when the winner replaced the caller's token, as every request with it now is.
      current = await this.authenticate(current.id, `Bearer ${readToken}`);
    }
  }
}
