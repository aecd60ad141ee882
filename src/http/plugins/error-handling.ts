// One place that turns every failure into the documented error body (../shared/spec/decisions.md §3):
// thrown ApiErrors, Fastify's own errors (validation, body parsing, limits), unknown routes and
// wrong methods, undecodable URLs and broken HTTP. 5xx details go to the log, never to the client.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import type { Socket } from 'node:net';
import { ApiError, INTERNAL_MESSAGE, errorBody, type ERROR_CATALOGUE } from '../../domain/errors.js';

interface AjvIssue {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

const PART_NAMES: Record<string, string> = { body: 'body field', querystring: 'query parameter', params: 'path parameter', headers: 'header' };

/** Always names the field: "Invalid query parameter 'limit': must be <= 100." */
function describeValidation(issue: AjvIssue | undefined, context: string | undefined): string {
  const params = issue?.params ?? {};
  if (issue?.keyword === 'additionalProperties') {
    return `Unknown property '${String(params.additionalProperty)}' in the ${context ?? 'body'}: no other properties are allowed.`;
  }
  const path = (issue?.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
  const field = issue?.keyword === 'required' ? String(params.missingProperty) : path;
  if (field === '') return context === 'body' ? 'The body must be a JSON object.' : `Invalid ${context ?? 'request'}.`;
  const name = field === 'idempotency-key' ? 'Idempotency-Key' : field;
  return `Invalid ${PART_NAMES[context ?? ''] ?? 'field'} '${name}': ${issue?.message ?? 'invalid'}.`;
}

/** Maps any error reaching Fastify's handler to an ApiError; null means "internal". */
export function toApiError(err: FastifyError | ApiError | Error): ApiError | null {
  if (err instanceof ApiError) return err;
  const fe = err as FastifyError & { validation?: AjvIssue[]; validationContext?: string };
  if (fe.validation) return new ApiError('invalid_request', describeValidation(fe.validation[0], fe.validationContext), {}, { cause: err });
  switch (fe.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('unsupported_media_type', 'Send the body as JSON with Content-Type: application/json.');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('payload_too_large', 'The request body is larger than this service accepts (MAX_PAYLOAD_BYTES).');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('invalid_request', 'The body must be a JSON object; it was empty.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_EMPTY_TYPE':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return new ApiError('invalid_request', 'The request body or its headers are malformed.');
    case 'FST_ERR_BAD_URL':
      return new ApiError('not_found', 'Not found: the URL could not be decoded.');
  }
  // A stream cut by the client while its body was being read.
  if (fe.code === 'ECONNRESET' || fe.message === 'aborted') return new ApiError('invalid_request', 'The request body was not received completely.');
  const status = fe.statusCode ?? 500;
  if (status === 404) return new ApiError('not_found', 'Not found.');
  if (status === 413) return new ApiError('payload_too_large', 'The request body is too large.');
  if (status === 415) return new ApiError('unsupported_media_type', 'Send the body as JSON with Content-Type: application/json.');
  if (status >= 400 && status < 500) return new ApiError('invalid_request', 'The request is malformed.');
  return null;
}

export function sendApiError(reply: FastifyReply, e: ApiError): FastifyReply {
  return reply.code(e.status).headers(e.headers).type('application/json; charset=utf-8').send(JSON.stringify(errorBody(e.code, e.message)));
}

function sendInternal(reply: FastifyReply): FastifyReply {
  return sendApiError(reply, new ApiError('internal', INTERNAL_MESSAGE));
}

const HTTP_ERROR_BODY = (status: number, code: keyof typeof ERROR_CATALOGUE, message: string) => {
  const body = JSON.stringify(errorBody(code, message));
  return `HTTP/1.1 ${status} ${status === 400 ? 'Bad Request' : status === 408 ? 'Request Timeout' : status === 431 ? 'Request Header Fields Too Large' : 'Error'}\r\n` +
    `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
};

/**
 * For Node's HTTP parser errors (bad request line, oversized headers, timeouts before a request
 * exists): answer in the documented shape where the socket can still take it.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  // As Node's own handler: answer only if no response is in flight on this socket, else the
  // bytes would land after (or inside) that response and corrupt the peer's view.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const code = err.code;
  const response = code === 'HPE_HEADER_OVERFLOW'
    ? HTTP_ERROR_BODY(431, 'invalid_request', 'Request headers are too large.')
    : code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? HTTP_ERROR_BODY(408, 'invalid_request', 'The request was not received in time.')
      : HTTP_ERROR_BODY(400, 'invalid_request', 'Malformed HTTP request.');
  socket.end(response);
}

/** Fastify's hook for errors it raises before routing (an undecodable URL). */
export function frameworkErrors(error: FastifyError, _req: FastifyRequest, reply: FastifyReply): void {
  const e = toApiError(error) ?? new ApiError('invalid_request', 'Malformed request.');
  void sendApiError(reply, e);
}

/** Error handler, 404 handler and 405 detection (a shadow router knows every path and its methods). */
export function registerErrorHandling(app: FastifyInstance): void {
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

  app.setErrorHandler((err: FastifyError, request, reply) => {
    const e = toApiError(err);
    if (e) {
      if (e.status >= 500) request.log.error({ err }, 'request failed');
      return sendApiError(reply, e);
    }
    request.log.error({ err }, 'unhandled error');
    return sendInternal(reply);
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '/';
    const allowed = (['GET', 'POST', 'DELETE', 'PUT', 'PATCH'] as const).filter((m) => {
      try {
        return shadow.find(m, path) !== null;
      } catch {
        return false;
      }
    });
    if (allowed.length > 0) {
      return sendApiError(reply, new ApiError('method_not_allowed', `${request.method} is not allowed here; use ${allowed.join(' or ')}.`, { allow: allowed.join(', ') }));
    }
    return sendApiError(reply, new ApiError('not_found', 'Not found: no such route.'));
  });
}
