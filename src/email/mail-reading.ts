// A received message read once: MIME parsed and content extracted (mime-to-event.ts) beside the
// sender's authentication (sender-authentication.ts), which needs the connection's facts.
//
// Both run in the mail-parsing pool (mail-parse-pool.ts), as two tasks with budgets of their own, so
// a message that makes one of them pass a limit keeps the other's result. Past a limit the message
// is still stored (docs/design.md, "Bounded work"): a parse that did not finish gives what a bounded split of the
// bytes can tell (top-level headers, the undecoded body) with `parse_error` saying which limit, and
// an authentication that did not finish reports temperror, as a DNS outage does.
import { withRawBytes } from './email-blobs.js';
import { MailParseLimitError, type MailParsePool } from './mail-parse-pool.js';
import { messageShape, withBoundedDkimSignatures } from './message-limits.js';
import { type EmailLimits, type ParsedEmail, parseEmail, unparsedEmail } from './mime-to-event.js';
import {
  authenticateSender,
  DEFAULT_AUTHENTICATION_BUDGET_MS,
  type SenderAuthenticationOptions,
  type SenderProof,
  type SmtpFacts,
  UNPROVEN,
} from './sender-authentication.js';

/** The message as data within the event limits, the bytes to store beside it, and its authentication in `data`. */
export type MailReader = (raw: Buffer, facts: SmtpFacts) => Promise<ParsedEmail>;

/** The proof into the parsed mail: the authentication in its data, the passing DKIM domains beside it. */
function withProof(parsed: ParsedEmail, proof: SenderProof): ParsedEmail {
  parsed.data.authentication = proof.authentication;
  parsed.dkimPassDomains = proof.dkimPassDomains;
  return parsed;
}

/** On the calling thread, without budgets: for tests of the pure steps and tools, never for the listener. */
export function inProcessMailReader(auth: SenderAuthenticationOptions, limits: EmailLimits): MailReader {
  return async (raw, facts) => {
    const authentication = authenticateSender(withBoundedDkimSignatures(raw, messageShape(raw)), facts, auth);
    const parsed = await parseEmail(raw, limits);
    return withProof(parsed, await authentication);
  };
}

export interface PooledMailReaderOptions {
  /** What an event may hold inline (MAX_EVENT_BYTES); the rest is stored beside it. */
  limits: EmailLimits;
  lookupTimeoutMs?: number | undefined;
  /** The DNS budget of one message's authentication; the worker gets the pool's timeout on top for its CPU. */
  authenticationBudgetMs?: number | undefined;
  /** Told when a task failed (a limit passed, or mailauth threw). */
  onProblem?: ((what: 'parse' | 'authenticate', err: unknown) => void) | undefined;
}

export function pooledMailReader(pool: MailParsePool, opts: PooledMailReaderOptions): MailReader {
  const authBudgetMs = opts.authenticationBudgetMs ?? DEFAULT_AUTHENTICATION_BUDGET_MS;
  return async (raw, facts) => {
    // mailauth hashes the body once per distinct DKIM-Signature: it sees the first MAX_DKIM_SIGNATURES only.
    const shape = messageShape(raw);
    const forAuth = withBoundedDkimSignatures(raw, shape);
    const authentication = pool
      .run({ kind: 'authenticate', facts, lookupTimeoutMs: opts.lookupTimeoutMs, budgetMs: authBudgetMs }, forAuth, authBudgetMs + pool.timeoutMs)
      .then(
        (result) => {
          if (result.kind !== 'authenticate') throw new Error('the mail parser answered another task');
          if (result.error !== null) opts.onProblem?.('authenticate', new Error(result.error));
          return result.proof;
        },
        (err: unknown) => {
          opts.onProblem?.('authenticate', err);
          return UNPROVEN;
        },
      );
    let parsed: ParsedEmail;
    try {
      const result = await pool.run({ kind: 'parse', limits: opts.limits }, raw);
      if (result.kind !== 'parse') throw new Error('the mail parser answered another task');
      // The worker sends no copy of the raw message back: these are the bytes it was given.
      parsed = withRawBytes(result.parsed, raw);
    } catch (err) {
      // A busy pool is not the message's fault: the sender is asked to retry (451), which keeps the mail whole.
      if (err instanceof MailParseLimitError && (err.limit === 'busy' || err.limit === 'closed')) {
        await authentication;
        throw err;
      }
      opts.onProblem?.('parse', err);
      parsed = unparsedEmail(
        raw,
        `the message was not decoded: ${err instanceof Error ? err.message : String(err)}; text (or raw.url) holds the undecoded message`,
        opts.limits,
      );
    }
    return withProof(parsed, await authentication);
  };
}
