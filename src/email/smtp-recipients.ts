// RCPT TO -> a live address (docs/design.md, "Inbound email"): `<slug>@<EMAIL_DOMAIN>` or `<slug>+<tag>@<EMAIL_DOMAIN>`.
import { SLUG_RE } from '../domain/credentials.js';
import type { AddressRecord } from '../domain/model.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';

/** What a recipient resolves to when it names a live address. */
export interface Recipient {
  address: AddressRecord;
  tag: string | undefined;
}

/** `<slug>@<domain>` or `<slug>+<tag>@<domain>`, domain case-insensitive; null for anything else. */
export function parseRecipient(rcpt: string, emailDomain: string): { slug: string; tag: string | undefined } | null {
  const at = rcpt.lastIndexOf('@');
  if (at <= 0) return null;
  const domain = rcpt
    .slice(at + 1)
    .replace(/\.$/, '')
    .toLowerCase();
  if (domain !== emailDomain.toLowerCase()) return null;
  const local = rcpt.slice(0, at);
  const plus = local.indexOf('+');
  // Slugs are lower-case; a sender's MTA may have changed the case of the local part.
  const slug = (plus === -1 ? local : local.slice(0, plus)).toLowerCase();
  if (!SLUG_RE.test(slug)) return null;
  const tag = plus === -1 ? '' : local.slice(plus + 1);
  return { slug, tag: tag === '' ? undefined : tag };
}

/** The live address a recipient names, or null: unknown, other domain, deleted, or expired. */
export function recipientResolver(service: ReturnAddressService, emailDomain: string, now: () => number): (rcpt: string) => Promise<Recipient | null> {
  return async (rcpt) => {
    const parsed = parseRecipient(rcpt, emailDomain);
    if (!parsed) return null;
    const address = await service.findAddressBySlug(parsed.slug);
    if (!address || now() >= address.expiresAt) return null;
    return { address, tag: parsed.tag };
  };
}
