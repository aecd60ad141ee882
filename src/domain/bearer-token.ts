// The read token's credential form: parsing `Authorization: Bearer <read token>` and the 401s that say
// what was wrong with it. Apart from the queue's rules (return-address-service.ts), which only ask
// for the token and compare it with the address's hash.
import { INBOX_SECRET_RE, READ_TOKEN_RE } from './credentials.js';
import { unauthorized } from './errors.js';

/**
 * The token of an `Authorization: Bearer <read token>` header; 401 when there is none of that form.
 * The three 401s of design.md, "Errors" say which case it is and the fix (no header; not a bearer read token;
 * a well-formed token that is not this address's), and none depends on whether the address exists.
 */
export function bearerToken(authorization: string | undefined): string {
  if (authorization === undefined || authorization.trim() === '') throw unauthorized(MISSING_BEARER, false);
  const m = /^Bearer +(\S+) *$/i.exec(authorization);
  const token = m?.[1];
  if (token === undefined || !READ_TOKEN_RE.test(token)) {
    throw unauthorized(token !== undefined && INBOX_SECRET_RE.test(token) ? INBOX_SECRET_AS_BEARER : MALFORMED_BEARER);
  }
  return token;
}

const MISSING_BEARER = 'No Authorization header: send Authorization: Bearer <read_token>, the credentials.read_token returned when the address was created.';
const MALFORMED_BEARER =
  'The Authorization header is not a bearer read token: send exactly "Authorization: Bearer aa_read_…" ' +
  '(the scheme Bearer, one space, then the 51-character credentials.read_token).';
const INBOX_SECRET_AS_BEARER =
  'The Authorization header holds an inbox secret (aa_ingress_…), which can only deliver: ' +
  'send Authorization: Bearer <read_token> (credentials.read_token, aa_read_…) to read.';
/** The third 401: a well-formed read token that is not this address's (the service checks it against the stored hash). */
export const WRONG_TOKEN =
  'This read token does not open this address: use the credentials.read_token returned when this address was created ' +
  '(a token opens only its own address).';
