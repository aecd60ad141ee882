// data.authentication of an email event (design.md, "Inbound email"): SPF, DKIM and DMARC as
// mailauth reports them, checked once per message at the end of DATA.
//
// Bounded: every DNS lookup gets its own timeout and all lookups of one message share a total
// budget; a lookup that fails, throws or passes either bound counts as a DNS timeout, which
// mailauth reports as `temperror`. The check as a whole is raced against the budget too, so a
// message is never held longer than `budgetMs` (plus the CPU of hashing it) and the SMTP session
// always gets its answer. Nothing in the message is fetched: ARC and BIMI (which would look up
// more records for nothing this service reports) are off.
import { promises as dns } from 'node:dns';

// mailauth and what it loads add ~34 MB to the process: loaded with the first mail, not at boot, so
// a service that receives no email does not carry it (as MCP's SDK, mcp-route.ts).
let mailauth: Promise<typeof import('mailauth')> | undefined;
const loadMailauth = () => (mailauth ??= import('mailauth'));

export type AuthResult = string;

export interface SenderAuthentication {
  /** SPF of the MAIL FROM domain (or the HELO name for the null sender): pass, fail, softfail, neutral, none, temperror, permerror. */
  spf: AuthResult;
  /** Best DKIM result among the signatures: pass when one passes; none when unsigned. */
  dkim: AuthResult;
  /** DMARC of the From domain: pass, fail, none (no policy), temperror, permerror. */
  dmarc: AuthResult;
  /** pass only when DMARC passes; fail when any check failed; temperror when a lookup did not answer; else none. */
  summary: 'pass' | 'fail' | 'temperror' | 'none';
}

/** The authentication and, beside it (not in the event's data), the d= domains of the DKIM signatures that passed. */
export interface SenderProof {
  authentication: SenderAuthentication;
  /** Lower-case: what a sender policy's `require: dkim` compares with the From domain. */
  dkimPassDomains: string[];
}

/** `resolve(name, rrtype)` as node's dns.promises.resolve; errors carry its codes (ENOTFOUND, ENODATA, …). */
export type DnsResolver = (name: string, rrtype: string) => Promise<unknown>;

export interface SenderAuthenticationOptions {
  resolver?: DnsResolver | undefined;
  /** Longest wait for one DNS answer. */
  lookupTimeoutMs?: number | undefined;
  /** Longest time for all the lookups of one message together. */
  budgetMs?: number | undefined;
  /** Told when mailauth itself throws (the result is then temperror everywhere). */
  onError?: ((err: unknown) => void) | undefined;
}

export interface SmtpFacts {
  /** The SMTP client's address. */
  ip: string;
  /** EHLO/HELO name, when the client gave one. */
  helo?: string | undefined;
  /** MAIL FROM address; "" for the null sender. */
  sender: string;
  /** This receiving host's name, as written into the results. */
  mta: string;
}

export const DEFAULT_DNS_LOOKUP_TIMEOUT_MS = 3000;
export const DEFAULT_AUTHENTICATION_BUDGET_MS = 8000;

const ALL_TEMPERROR: SenderAuthentication = { spf: 'temperror', dkim: 'temperror', dmarc: 'temperror', summary: 'temperror' };
export const UNPROVEN: SenderProof = { authentication: ALL_TEMPERROR, dkimPassDomains: [] };

export function summarize(spf: string, dkim: string, dmarc: string): SenderAuthentication['summary'] {
  if (dmarc === 'pass') return 'pass';
  const all = [spf, dkim, dmarc];
  if (all.includes('fail')) return 'fail';
  if (all.includes('temperror')) return 'temperror';
  return 'none';
}

function dnsTimeout(name: string, why: string): Error {
  // mailauth maps ETIMEOUT to temperror in SPF, and any code it does not know to temperror in DKIM and DMARC.
  return Object.assign(new Error(`DNS lookup of ${name} ${why}`), { code: 'ETIMEOUT' });
}

/** A resolver whose every answer comes within the lookup timeout and before the deadline, or fails. */
export function boundedResolver(resolver: DnsResolver, lookupTimeoutMs: number, deadline: number): (name: string, rrtype: string) => Promise<never> {
  return (name, rrtype) => {
    const left = Math.min(lookupTimeoutMs, deadline - Date.now());
    if (left <= 0) return Promise.reject(dnsTimeout(name, 'skipped: the time for this message is spent'));
    return new Promise<never>((resolve, reject) => {
      const timer = setTimeout(() => reject(dnsTimeout(name, `timed out after ${left} ms`)), left);
      let answer: Promise<unknown>;
      try {
        answer = Promise.resolve(resolver(name, rrtype));
      } catch (err) {
        answer = Promise.reject(err);
      }
      answer.then(
        (value) => {
          clearTimeout(timer);
          resolve(value as never);
        },
        (err: unknown) => {
          clearTimeout(timer);
          const code = (err as { code?: unknown } | null)?.code;
          // "No such name / no such record" is an answer; anything else is a failed lookup.
          reject(code === 'ENOTFOUND' || code === 'ENODATA' ? err : dnsTimeout(name, `failed: ${errorText(err)}`));
        },
      );
    });
  };
}

/** SPF, DKIM and DMARC of one received message; never throws, never takes longer than the budget. */
export async function authenticateSender(raw: Buffer, facts: SmtpFacts, opts: SenderAuthenticationOptions = {}): Promise<SenderProof> {
  const budgetMs = opts.budgetMs ?? DEFAULT_AUTHENTICATION_BUDGET_MS;
  const deadline = Date.now() + budgetMs;
  const resolver = boundedResolver(
    opts.resolver ?? ((name, rrtype) => dns.resolve(name, rrtype)),
    opts.lookupTimeoutMs ?? DEFAULT_DNS_LOOKUP_TIMEOUT_MS,
    deadline,
  );
  let timer: NodeJS.Timeout | undefined;
  const overBudget = new Promise<SenderProof>((resolve) => {
    timer = setTimeout(() => resolve(UNPROVEN), budgetMs);
  });
  const check = (async (): Promise<SenderProof> => {
    const { authenticate } = await loadMailauth();
    const result = await authenticate(raw, {
      ip: facts.ip,
      helo: facts.helo,
      sender: facts.sender === '' ? undefined : facts.sender,
      mta: facts.mta,
      resolver: resolver as never,
      disableArc: true,
      disableBimi: true,
    });
    const spf = result.spf ? String(result.spf.status.result) : 'none';
    const signatures = result.dkim.results ?? [];
    const dkimResults = signatures.map((r) => String(r.status.result));
    const dkim = dkimResults.includes('pass') ? 'pass' : (dkimResults[0] ?? 'none');
    const dmarc = result.dmarc ? String(result.dmarc.status.result) : 'none';
    const dkimPassDomains = signatures
      .filter((r) => r.status.result === 'pass' && typeof r.signingDomain === 'string')
      .map((r) => String(r.signingDomain).toLowerCase());
    return { authentication: { spf, dkim, dmarc, summary: summarize(spf, dkim, dmarc) }, dkimPassDomains };
  })().catch((err: unknown) => {
    opts.onError?.(err);
    return UNPROVEN;
  });
  try {
    return await Promise.race([check, overBudget]);
  } finally {
    clearTimeout(timer);
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
