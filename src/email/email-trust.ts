// A mail's trust (design.md, "Trust: what an agent may believe"): proven only by a DMARC pass, which
// aligns the From domain with a domain that passed SPF or DKIM; the From domain is then the
// identity. The migrations give mail stored before trust existed the same rule in SQL.
import { type Trust, trustJson } from '../domain/trust.js';
import type { EmailData } from './mime-to-event.js';

export function emailTrust(data: Pick<EmailData, 'authentication' | 'from'>): Trust {
  const dmarc = data.authentication?.dmarc ?? 'none';
  if (dmarc === 'pass') return { ingress: 'email', verified: true, method: 'dmarc', identity: fromDomain(data.from?.address), reason: null };
  return {
    ingress: 'email',
    verified: dmarc === 'fail' ? false : null,
    method: dmarc === 'fail' ? 'dmarc' : null,
    identity: null,
    reason: `DMARC result is ${dmarc}, not pass: the From address is not proven`,
  };
}

export const emailTrustJson = (data: Pick<EmailData, 'authentication' | 'from'>): string => trustJson(emailTrust(data));

/** The domain after the last @, lower-case; null when there is none, or when it holds a control character. */
function fromDomain(address: string | undefined): string | null {
  const at = address?.lastIndexOf('@') ?? -1;
  if (address === undefined || at < 0) return null;
  const domain = address.slice(at + 1).toLowerCase();
  for (let i = 0; i < domain.length; i++) {
    const c = domain.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return null;
  }
  return domain === '' ? null : domain;
}
