// A received message read once: MIME parsed and content extracted (mime-to-event.ts) beside the
// sender's authentication (sender-authentication.ts), which needs the connection's facts.
import type { EmailData } from './mime-to-event.js';
import { parseEmailMessage } from './mime-to-event.js';
import { authenticateSender, type SenderAuthenticationOptions, type SmtpFacts } from './sender-authentication.js';

export type MailReader = (raw: Buffer, facts: SmtpFacts) => Promise<EmailData>;

export function inProcessMailReader(auth: SenderAuthenticationOptions): MailReader {
  return async (raw, facts) => {
    const authentication = authenticateSender(raw, facts, auth);
    const data = await parseEmailMessage(raw);
    data.authentication = await authentication;
    return data;
  };
}
