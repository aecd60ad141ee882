// The signing secrets an address holds for the capture URL (design.md, "Capture URL"): replaced as a whole by
// its reader, opened by its sender's requests to check signatures, never returned. Sealed as
// signing-keys.ts explains.
import { ApiError, notFound } from './errors.js';
import type { AddressRecord } from './model.js';
import type { Store } from './ports.js';
import { openDataKey, openWithDataKey, sealWithDataKey } from './signing-keys.js';
import { SIGNING_SCHEMES, type SigningScheme } from './signing-schemes.js';

export type SigningSecretSet = Partial<Record<SigningScheme, string>>;

export class SigningSecrets {
  constructor(private readonly store: Store) {}

  /** Replaces every secret of the address with `secrets` ({} removes them all); the schemes now set. */
  async replace(address: AddressRecord, readToken: string, secrets: SigningSecretSet): Promise<SigningScheme[]> {
    if (address.signingKeys === null) {
      throw new ApiError('invalid_request', 'This address was created before signing secrets existed and cannot hold them: create a new address.');
    }
    const dataKey = openDataKey(address.signingKeys, address.id, 'reader', readToken);
    // The token was checked against its hash already; a key that does not open is a corrupt row.
    if (dataKey === null) throw new Error(`the signing keys of ${address.id} do not open with its read token`);
    const set: SigningSecretSet = {};
    for (const scheme of SIGNING_SCHEMES) if (secrets[scheme] !== undefined) set[scheme] = secrets[scheme];
    const schemes = Object.keys(set) as SigningScheme[];
    const sealed = schemes.length === 0 ? null : sealWithDataKey(dataKey, address.id, Buffer.from(JSON.stringify(set)));
    if (!(await this.store.setSigningSecrets(address.id, sealed))) throw notFound('Address');
    return schemes;
  }

  /** The secrets, opened with the inbox secret a capture request came with; {} when none are set. */
  async open(address: AddressRecord, inboxSecret: string): Promise<SigningSecretSet> {
    if (address.signingKeys === null) return {};
    const sealed = await this.store.getSigningSecrets(address.id);
    if (!sealed) return {};
    const dataKey = openDataKey(address.signingKeys, address.id, 'sender', inboxSecret);
    const plain = dataKey && openWithDataKey(dataKey, address.id, sealed);
    return plain ? (JSON.parse(plain.toString('utf8')) as SigningSecretSet) : {};
  }
}
