// The only body parser: JSON, with the nesting depth checked by a linear scan before parsing, so
// deep input is refused with 400 and never reaches anything recursive. Every other content type is
// 415 (Fastify's answer when no parser matches). An empty body parses to undefined, which the
// route's schema then accepts (create address) or refuses (delivery).
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../domain/errors.js';
import { MAX_BODY_DEPTH, MAX_VALUE_DEPTH, nestsDeeperThan } from '../../domain/json-depth.js';

export function parseJsonBody(text: string): unknown {
  if (text.length === 0) return undefined;
  if (nestsDeeperThan(text, MAX_BODY_DEPTH)) {
    throw new ApiError('invalid_request', `The body nests deeper than ${MAX_VALUE_DEPTH} levels inside data or metadata.`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError('invalid_json', 'The body is not valid JSON.');
  }
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
