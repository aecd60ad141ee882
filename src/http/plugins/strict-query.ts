// Unknown query parameters are refused on every route (400 invalid_request naming the parameter and
// the allowed ones), so a misspelt `?cursor=2` is never silently ignored. A route with no query
// schema takes no query parameters; a route's own object schema is closed unless it says otherwise.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';

export function closeQueryStrings(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const schema = (route.schema ??= {}) as { querystring?: Record<string, unknown> };
    if (schema.querystring === undefined) {
      schema.querystring = Type.Object({}, { additionalProperties: false }) as unknown as Record<string, unknown>;
    } else if (schema.querystring.type === 'object' && schema.querystring.additionalProperties === undefined) {
      schema.querystring = { ...schema.querystring, additionalProperties: false };
    }
  });
}
