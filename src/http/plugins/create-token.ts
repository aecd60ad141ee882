// CREATE_TOKENS (design.md, "Operating a public instance"): when the operator sets it, creating an address takes
// `Authorization: Bearer <one of the tokens>`, else 401. Off by default, so the contract's
// anonymous create stays the default.
//
// Constant time: the presented token and every configured token are hashed to 32 bytes and all of
// them compared with timingSafeEqual, without stopping at a match, so the answer's timing says
// neither which token matched nor how much of one did (nor, through the hash, a token's length).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { unauthorized } from '../../domain/errors.js';

const digest = (token: string) => createHash('sha256').update(token, 'utf8').digest();

const MISSING =
  'This instance requires a create token to create an address: send Authorization: Bearer <create token> ' +
  '(one of the tokens its operator set in CREATE_TOKENS; ask the operator for one).';
const WRONG = "This bearer token is not one of this instance's create tokens (CREATE_TOKENS): send a token its operator gave you.";

/** The onRequest check of POST /api/v1/addresses for the configured tokens. */
export function requireCreateToken(tokens: readonly string[]): (request: FastifyRequest) => Promise<void> {
  const digests = tokens.map(digest);
  return async (request) => {
    const header = request.headers.authorization;
    if (header === undefined || header.trim() === '') throw unauthorized(MISSING, false);
    const m = /^Bearer +(\S+) *$/i.exec(header);
    if (!m) throw unauthorized(MISSING);
    const presented = digest(m[1]!);
    let matched = false;
    for (const d of digests) matched = timingSafeEqual(presented, d) || matched;
    if (!matched) throw unauthorized(WRONG);
  };
}
