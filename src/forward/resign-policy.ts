// Which events `forward --resign` may sign again (design.md, "Trust: what an agent may believe"): a
// fresh local signature tells the handler "the provider sent this", so it is given only to what the
// service proved: an event whose trust.verified is true, or a capture whose signature matched and
// only its timestamp was outside the provider's tolerance (data.signature.stale, which a capture's
// data holds as the service wrote it). Anything else would turn a forgery into a validly signed
// request; it is skipped for that target unless --resign-unverified is given.
import type { Event } from '@return-address/client';

/** Why `event` must not be signed again, or null when it may be. */
export function resignRefusal(event: Event): string | null {
  const trust = event.trust;
  if (trust.verified === true) return null;
  if (trust.ingress === 'capture' && isStale(event.data)) return null;
  const verified = trust.verified === null ? 'unverified (nothing was checked)' : 'not verified';
  return `not re-signed: ${trust.ingress} event ${verified}${trust.reason === null ? '' : `: ${trust.reason}`}; --resign-unverified sends it anyway`;
}

function isStale(data: unknown): boolean {
  if (data === null || typeof data !== 'object') return false;
  const signature = (data as { signature?: unknown }).signature;
  return signature !== null && typeof signature === 'object' && (signature as { stale?: unknown }).stale === true;
}
