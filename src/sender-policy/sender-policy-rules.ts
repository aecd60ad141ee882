// A sender policy's rules (design.md, "Sender policy and quarantine"): what a policy may hold, its
// normal form, and the one function that judges a delivery's sender against it. No I/O.
import { ApiError } from '../domain/errors.js';
import type { CaptureSender, EmailSender, SenderFacts } from '../domain/sender-screen.js';

export const MAX_ALLOW_ENTRIES = 100;
/** An allow entry: a domain (at most 253 characters) or an address (at most 254). */
export const MAX_ALLOW_ENTRY_CHARS = 254;
export const EMAIL_REQUIREMENTS = ['dmarc', 'dkim', 'none'] as const;
export type EmailRequirement = (typeof EMAIL_REQUIREMENTS)[number];
/** What `email.require` is when a policy gives `email` without it: the only check a From header cannot fake alone. */
export const DEFAULT_EMAIL_REQUIREMENT: EmailRequirement = 'dmarc';

export interface SenderPolicy {
  email?: { allow?: string[]; require: EmailRequirement };
  capture?: { require_signature: boolean };
}

/** The body of PUT …/sender-policy once its schema passed: each part optional. */
export interface SenderPolicyInput {
  email?: { allow?: string[]; require?: string };
  capture?: { require_signature?: boolean };
}

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/** The local part of an address as RFC 5322's dot-atom allows it (no quoted forms). */
const LOCAL_PART = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;

/** A domain name of at least two labels (letters, digits, hyphens; no leading or trailing hyphen), at most 253 characters. */
export function isDomain(text: string): boolean {
  if (text.length > 253) return false;
  const labels = text.split('.');
  return labels.length >= 2 && labels.every((l) => LABEL.test(l)) && !/^[0-9]+$/.test(labels.at(-1)!);
}

const invalid = (field: string, fix: string) => new ApiError('invalid_request', `Invalid body field '${field}': ${fix}`);

/**
 * Checks a policy past its schema and answers its normal form: entries lower-case, `require`
 * filled in. 400 invalid_request naming the field and the fix.
 */
export function normalizePolicy(input: SenderPolicyInput): SenderPolicy {
  const policy: SenderPolicy = {};
  if (input.email !== undefined) {
    const require = input.email.require ?? DEFAULT_EMAIL_REQUIREMENT;
    if (!(EMAIL_REQUIREMENTS as readonly string[]).includes(require)) {
      throw invalid(
        'email.require',
        `must be one of ${EMAIL_REQUIREMENTS.join(', ')} (dmarc: DMARC passes for the From domain; dkim: a DKIM signature with d= the From domain passes; none: the allow list alone).`,
      );
    }
    policy.email = { require: require as EmailRequirement };
    const allow = input.email.allow;
    if (allow !== undefined) {
      if (allow.length > MAX_ALLOW_ENTRIES) throw invalid('email.allow', `holds ${allow.length} entries; at most ${MAX_ALLOW_ENTRIES} may be given.`);
      const seen = new Set<string>();
      policy.email.allow = allow.map((entry, i) => {
        const e = entry.trim().toLowerCase();
        if (!isAllowEntry(e)) {
          throw invalid(
            `email.allow.${i}`,
            'must be a domain (example.com) or an address (alice@example.org), without spaces, angle brackets or a display name.',
          );
        }
        if (seen.has(e)) throw invalid(`email.allow.${i}`, `'${e}' is listed twice; give each domain or address once.`);
        seen.add(e);
        return e;
      });
    }
  }
  if (input.capture !== undefined) policy.capture = { require_signature: input.capture.require_signature ?? false };
  return policy;
}

function isAllowEntry(e: string): boolean {
  if (e.length === 0 || e.length > MAX_ALLOW_ENTRY_CHARS) return false;
  const at = e.lastIndexOf('@');
  if (at < 0) return isDomain(e);
  const local = e.slice(0, at);
  return local.length >= 1 && local.length <= 64 && LOCAL_PART.test(local) && isDomain(e.slice(at + 1));
}

/**
 * The rule the sender fails, in one line that names it and never repeats the sender's own text
 * (the reason sits beside what the service vouches for); null when the policy lets it through.
 * A mail is judged by its From header, the sender a reader sees: when `allow` is given, its
 * address or domain must be listed (domains match exactly: a subdomain is not its parent); then
 * `require` must hold for the From domain: DMARC pass (DMARC aligns with the From domain by
 * definition), or a passing DKIM signature whose d= is that domain. A capture under
 * `require_signature` needs its provider signature verified against this address's secret.
 */
export function judge(policy: SenderPolicy, sender: SenderFacts): string | null {
  return sender.ingress === 'email' ? judgeEmail(policy, sender) : judgeCapture(policy, sender);
}

function judgeEmail(policy: SenderPolicy, mail: EmailSender): string | null {
  const rule = policy.email;
  if (rule === undefined) return null;
  const from = mail.from?.trim().toLowerCase() ?? '';
  const at = from.lastIndexOf('@');
  const domain = at < 0 ? '' : from.slice(at + 1);
  if (rule.allow !== undefined && !(domain !== '' && rule.allow.some((entry) => (entry.includes('@') ? entry === from : entry === domain)))) {
    return from === ''
      ? 'sender policy email.allow: the mail has no From address, so it cannot be on the allow list'
      : "sender policy email.allow: the From address and its domain are not on this address's allow list";
  }
  if (rule.require === 'dmarc' && mail.dmarc !== 'pass') {
    return `sender policy email.require=dmarc: DMARC for the From domain is ${/^[a-z]{1,16}$/.test(mail.dmarc) ? mail.dmarc : 'not known'}, not pass`;
  }
  if (rule.require === 'dkim' && (domain === '' || !mail.dkimPassDomains.includes(domain))) {
    return 'sender policy email.require=dkim: no DKIM signature with d= the From domain passed';
  }
  return null;
}

function judgeCapture(policy: SenderPolicy, capture: CaptureSender): string | null {
  if (policy.capture?.require_signature !== true || capture.signatureVerified === true) return null;
  return capture.signatureVerified === false
    ? 'sender policy capture.require_signature: the request carried a signature that did not verify'
    : 'sender policy capture.require_signature: the request carried no signature this address holds a secret for';
}
