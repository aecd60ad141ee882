// What a way in proved about a delivery's sender, and the port that judges it against the address's
// sender policy (design.md, "Sender policy and quarantine"). The policy itself, its store and its
// rules live in src/sender-policy/, which implements SenderScreen; the service only asks it and
// stores the event quarantined when it answers a reason. A delivery is never refused for failing.
import { type Trust, trustJson } from './trust.js';

/** A mail's sender as the SMTP listener read it. */
export interface EmailSender {
  ingress: 'email';
  /** The From header's address (what a reader sees as the sender), or null when there is none. */
  from: string | null;
  /** DMARC of the From domain as mailauth reported it: pass, fail, none, temperror, permerror. */
  dmarc: string;
  /** The d= domains of the DKIM signatures that passed, lower-case. */
  dkimPassDomains: readonly string[];
}

/** A captured request: whether its provider signature checked against the address's secret. */
export interface CaptureSender {
  ingress: 'capture';
  /** true: verified; false: a signature that failed; null: nothing to check (no secret, or unsigned). */
  signatureVerified: boolean | null;
}

export type SenderFacts = EmailSender | CaptureSender;

export interface SenderScreen {
  /** The rule the delivery fails, in one line naming it; null when it passes (or the address has no policy). */
  check(addressId: string, sender: SenderFacts): Promise<string | null>;
}

/** No policy anywhere: what a service composed without src/sender-policy/ uses. */
export const NO_SCREEN: SenderScreen = { check: async () => null };

/**
 * The trust of an event the policy refused: what the way in proved stays (ingress, method, identity),
 * but it is not verified, and the reason names the rule it failed.
 */
export function refusedTrust(trust: string, reason: string): string {
  return trustJson({ ...(JSON.parse(trust) as Trust), verified: false, reason });
}
