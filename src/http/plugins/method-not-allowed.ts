// Unknown routes and wrong methods (design.md, "Errors"): 404 for a path no route has, 405 with Allow
// for a path that exists under other methods, and the errors Fastify's router raises before routing.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import { ApiError } from '../../domain/errors.js';
import { sendApiError, toApiError } from './api-error-handler.js';
import { closeAfterDrainingBody } from './body-draining.js';

/** Fastify's hook for errors it raises before routing (an undecodable URL). */
export function frameworkErrors(error: FastifyError, _req: FastifyRequest, reply: FastifyReply): void {
  const e = toApiError(error) ?? new ApiError('invalid_request', 'Malformed request.');
  void sendApiError(reply, e);
}

/**
 * The 404 handler and 405 detection (a shadow router knows every path and its methods). Register
 * before the routes: the shadow router learns them from the onRoute hook.
 */
export function registerMethodNotAllowed(app: FastifyInstance, opts: { maxDiscardBytes: number }): void {
  const shadow = FindMyWay({ ignoreTrailingSlash: true });
  app.addHook('onRoute', (route) => {
    const methods = ([] as string[]).concat(route.method);
    for (const m of methods) {
      try {
        shadow.on(m as HTTPMethod, route.url, () => {});
      } catch {
        // Already known (HEAD for GET, or an alias): nothing to add.
      }
    }
  });

  app.setNotFoundHandler((request, reply) => {
    closeAfterDrainingBody(request, reply, opts.maxDiscardBytes);
    const path = request.url.split('?')[0] ?? '/';
    // HEAD is answered wherever GET is (Fastify's exposeHeadRoutes), so it is allowed there too.
    const allowed = (['GET', 'HEAD', 'POST', 'DELETE', 'PUT', 'PATCH'] as const).filter((m) => {
      try {
        return shadow.find(m, path) !== null;
      } catch {
        return false;
      }
    });
    if (allowed.length > 0) {
      return sendApiError(
        reply,
        new ApiError('method_not_allowed', `${request.method} is not allowed here; use ${allowed.join(' or ')}.`, { allow: allowed.join(', ') }),
      );
    }
    return sendApiError(reply, new ApiError('not_found', 'Not found: no such route.'));
  });
}
