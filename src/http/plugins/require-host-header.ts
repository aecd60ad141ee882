// The Host check (design.md, "Errors"): answered in the documented shape, not Node's bare 400.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../domain/errors.js';

/** HTTP/1.1 requires a Host header (RFC 9112 §3.2); without one the request is a 400 naming it. */
export function requireHostHeader(request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
  if (request.headers.host === undefined && request.raw.httpVersion === '1.1') {
    return done(new ApiError('invalid_request', "The Host header is missing: an HTTP/1.1 request must send Host (the server's name and port)."));
  }
  done();
}
