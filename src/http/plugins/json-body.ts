// The only body parser: JSON, with the nesting depth checked by a linear scan right after parsing,
// so deep input is refused with 400 and never reaches anything recursive. Every other content type is
// 415 (Fastify's answer when no parser matches). An empty body parses to undefined, which the
// route's schema then accepts (create address) or refuses (delivery).
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../domain/errors.js';
import { MAX_BODY_DEPTH, MAX_VALUE_DEPTH, nestsDeeperThan } from '../../domain/json-depth.js';

/**
 * Text that may hold a number JSON.parse turns into Infinity: an exponent of three digits or more, or
 * 309 digits in a row. Cheap, and true for almost no real body; only then is the body parsed again to
 * look.
 */
const MAYBE_OUT_OF_RANGE = /[eE][+-]?\d{3}|\d{309}/;

function hasNonFiniteNumber(text: string): boolean {
  let found = false;
  JSON.parse(text, (_key, value: unknown) => {
    if (typeof value === 'number' && !Number.isFinite(value)) found = true;
    return value;
  });
  return found;
}

/**
 * Unparseable text is invalid_json whatever else is wrong with it (design.md, "Errors"), so JSON.parse
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
  // After the depth check: a reviver recurses.
  if (MAYBE_OUT_OF_RANGE.test(text) && hasNonFiniteNumber(text)) {
    throw new ApiError(
      'invalid_request',
      'A number in the body is beyond the range of a 64-bit float (such as 1e999) and would be stored as null: send it as a string.',
    );
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
