// One place that turns every failure into the documented error body (design.md, "Errors"):
// thrown ApiErrors, Fastify's own errors (validation, body parsing, limits), undecodable URLs.
// 5xx details go to the log, never to the client.

import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CaptureBudgetExceeded } from '../../capture/inflight-budget.js';
import { ApiError, answeredErrorCodes, errorBody, INTERNAL_MESSAGE } from '../../domain/errors.js';
import { isStoreUnavailable, RepeatedWarning, unavailableError, type WriteHealth } from '../../storage/store-unavailable.js';

/** The store-unavailable warnings of this process (one per interval, counted). */
const storeWarnings = new RepeatedWarning();

import { closeAfterDrainingBody } from './body-draining.js';
import { type AjvIssue, describeValidation } from './validation-messages.js';

/** Maps any error reaching Fastify's handler to an ApiError; null means "internal". */
export function toApiError(err: FastifyError | ApiError | Error, payloadLimit?: number, limitName = 'MAX_PAYLOAD_BYTES'): ApiError | null {
  if (err instanceof ApiError) return err;
  // A store that cannot be reached or written: 503 with Retry-After, never 500 (design.md, "Bounded work").
  if (isStoreUnavailable(err)) return unavailableError(err);
  const fe = err as FastifyError & { validation?: AjvIssue[]; validationContext?: string };
  if (fe.validation) return new ApiError('invalid_request', describeValidation(fe.validation[0], fe.validationContext), {}, { cause: err });
  switch (fe.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('unsupported_media_type', 'Send the body as JSON with Content-Type: application/json.');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(
        'payload_too_large',
        `The request body is larger than this service accepts (${limitName}${payloadLimit === undefined ? '' : ` = ${payloadLimit} bytes`}): send a smaller body.`,
      );
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('invalid_request', 'The body must be a JSON object; it was empty.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError(
        'invalid_request',
        "The body's length differs from the Content-Length header: send Content-Length equal to the body's size in bytes.",
      );
    case 'FST_ERR_CTP_EMPTY_TYPE':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return new ApiError('invalid_request', 'The Content-Type header is empty or malformed: send Content-Type: application/json.');
    case 'FST_ERR_BAD_URL':
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new ApiError('not_found', 'Not found: the URL could not be decoded.');
  }
  // A stream cut by the client while its body was being read.
  if (fe.code === 'ECONNRESET' || fe.message === 'aborted') {
    return new ApiError('invalid_request', 'The request body was not received completely: send as many bytes as the Content-Length header says.');
  }
  const status = fe.statusCode ?? 500;
  if (status === 404) return new ApiError('not_found', 'Not found.');
  if (status === 413) return new ApiError('payload_too_large', 'The request body is too large.');
  if (status === 415) return new ApiError('unsupported_media_type', 'Send the body as JSON with Content-Type: application/json.');
  if (status >= 400 && status < 500) return new ApiError('invalid_request', `The request was refused: ${fe.message}`);
  return null;
}

export function sendApiError(reply: FastifyReply, e: ApiError): FastifyReply {
  answeredErrorCodes.set(reply, e.code);
  return reply
    .code(e.status)
    .headers(e.headers)
    .type('application/json; charset=utf-8')
    .send(JSON.stringify(errorBody(e.code, e.message)));
}

function sendInternal(reply: FastifyReply): FastifyReply {
  return sendApiError(reply, new ApiError('internal', INTERNAL_MESSAGE));
}

export interface ErrorHandlingOptions {
  /** MAX_PAYLOAD_BYTES, for the 413 message. */
  maxPayloadBytes: number;
  /** The setting the 413 message names; MAX_PAYLOAD_BYTES unless a route has its own limit. */
  payloadLimitName?: string;
  /** MAX_DISCARD_BYTES: body bytes read and dropped after an early answer before the socket is closed. */
  maxDiscardBytes: number;
}

/** The app's record of store failures (decorated in app.ts), read by /readyz. */
export function writeHealthOf(app: FastifyInstance): WriteHealth | undefined {
  return (app as unknown as { writeHealth?: WriteHealth }).writeHealth;
}

/** Answers any error in the documented shape (a plugin with its own body limit sets its own, naming it). */
export function errorHandler(opts: ErrorHandlingOptions) {
  return (err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const e = toApiError(err, opts.maxPayloadBytes, opts.payloadLimitName);
    // A capture refused for the in-flight budget is closed after its answer: draining its body would read what the budget refuses.
    const overBudget = err instanceof CaptureBudgetExceeded;
    closeAfterDrainingBody(request, reply, overBudget ? 0 : opts.maxDiscardBytes);
    if (e) {
      const storeAway = e.code === 'unavailable' && !overBudget;
      // While the store is away every request fails alike: one warning per interval, with a count.
      if (storeAway) storeWarnings.report(request.log, { err }, 'request failed: the store is unavailable');
      else if (e.status >= 500 && !overBudget) request.log.error({ err }, 'request failed');
      // /readyz stays not ok for a while after the store failed to write (health.ts); a full capture budget is not that.
      if (storeAway) writeHealthOf(request.server)?.failed();
      return sendApiError(reply, e);
    }
    request.log.error({ err }, 'unhandled error');
    return sendInternal(reply);
  };
}
