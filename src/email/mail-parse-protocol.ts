// Messages between the mail-parsing pool (mail-parse-pool.ts) and its workers (mail-parse-worker.ts).
import type { EmailLimits, ParsedEmail } from './mime-to-event.js';
import type { SenderProof, SmtpFacts } from './sender-authentication.js';

export type MailTask =
  | { kind: 'parse'; limits: EmailLimits }
  | { kind: 'authenticate'; facts: SmtpFacts; lookupTimeoutMs: number | undefined; budgetMs: number | undefined };

export type MailTaskResult = { kind: 'parse'; parsed: ParsedEmail } | { kind: 'authenticate'; proof: SenderProof; error: string | null };

export type ToWorker =
  | { type: 'task'; id: number; task: MailTask; raw: Uint8Array }
  | { type: 'dns-answer'; query: number; ok: true; value: unknown }
  | { type: 'dns-answer'; query: number; ok: false; code: string | undefined; message: string };

export type FromWorker =
  | { type: 'done'; id: number; result: MailTaskResult }
  | { type: 'failed'; id: number; message: string }
  | { type: 'dns'; query: number; name: string; rrtype: string };
