// DELETE paths clients cannot rewrite (design.md, "Errors" and "Reading without loss"): curl and fetch resolve `.` and `..`
// segments (also %2E%2E) before sending, so `DELETE …/addresses/{id}/consumers/..` leaves as
// `DELETE …/addresses/{id}/`, which the router's trailing-slash tolerance would hand to the address
// DELETE. A DELETE whose path ends in a slash, or holds a dot segment, is therefore refused before
// routing reaches any resource: nothing is deleted by a path that is not exactly a resource's.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../domain/errors.js';

const DOT_SEGMENT = /^(?:\.|%2e){1,2}$/i;

/** Whether a DELETE's path (no query) ends in '/' or has a '.' or '..' segment, plain or percent-encoded. */
export function unsafeDeletePath(path: string): boolean {
  return path.endsWith('/') || path.split('/').some((segment) => DOT_SEGMENT.test(segment));
}

export function refuseUnsafeDeletePaths(request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
  if (request.method === 'DELETE' && unsafeDeletePath(request.url.split('?')[0] ?? '/')) {
    return done(
      new ApiError(
        'invalid_request',
        "A DELETE path may not end in '/' nor hold a '.' or '..' segment (plain or as %2E): HTTP clients rewrite those before sending, " +
          "so such a path may not name what was meant (a consumer named '..' would become the address itself). Send the resource's exact path.",
      ),
    );
  }
  done();
}
