// A captured request's trust (design.md, "Trust: what an agent may believe"): what the signature
// check proved about its sender, and nothing that the request itself says.
import { type Trust, trustJson } from '../domain/trust.js';
import type { SignatureCheck } from './signature-verification.js';

export function captureTrust(signature: SignatureCheck): Trust {
  if (signature.verified === true) {
    // The proven sender: whoever holds this address's secret for the scheme, i.e. that provider.
    return { ingress: 'capture', verified: true, method: signature.scheme, identity: signature.scheme, reason: null };
  }
  return { ingress: 'capture', verified: signature.verified, method: signature.scheme, identity: null, reason: signature.reason };
}

export const captureTrustJson = (signature: SignatureCheck): string => trustJson(captureTrust(signature));
