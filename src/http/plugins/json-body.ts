// The only body parser: JSON, with the nesting depth checked by a linear scan right after parsing,
// so deep input is refused with 400 and never reaches anything recursive. Every other content type is
// 415 (Fastify's answer when no parser matches). An empty body parses to undefined, which the
// route's schema then accepts (create address) or refuses (delivery).
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../domain/errors.js';
import { MAX_BODY_DEPTH, MAX_VALUE_DEPTH, nestsDeeperThan } from '../../domain/json-depth.js';

/**
 * Unparseable text is invalid_json whatever else is wrong with it (decisions §3), so JSON.parse
 * runs first: V8's parser is iterative and takes any depth. The depth scan then refuses deep input
 * before the validator or a serializer, which are recursive, see it.
 */
export function parseJsonBody(text: string): unknown {
  if (text.length === 0) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const detail = err instanceof SyntaxError ? ` (${err.message})` : '';
    throw new ApiError('invalid_json', `The body is not valid JSON${detail}: send one complete JSON object.`);
  }
  if (nestsDeeperThan(text, MAX_BODY_DEPTH)) {
    throw new ApiError('invalid_request', `The body nests deeper than ${MAX_VALUE_DEPTH} levels inside data or metadata: flatten it.`);
  }
  return value;
}

export function registerJsonBody(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}
