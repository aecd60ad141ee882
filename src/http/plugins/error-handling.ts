// One place that turns every failure into the documented error body (design.md, "Errors"):
// thrown ApiErrors, Fastify's own errors (validation, body parsing, limits), unknown routes and
// wrong methods, undecodable URLs and broken HTTP. 5xx details go to the log, never to the client.
import { CaptureBudgetExceeded } from '../../capture/inflight-budget.js';
import { isStoreUnavailable, unavailableError, type WriteHealth } from '../../storage/store-unavailable.js';
import { HTTP_DEDUPE_KEY_PATTERN } from '../../domain/dedupe-key.js';
import { STORABLE_TEXT } from '../schemas.js';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import type { Socket } from 'node:net';
import { ApiError, INTERNAL_MESSAGE, errorBody, type ERROR_CATALOGUE } from '../../domain/errors.js';

interface AjvIssue {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
  /** With ajv's verbose option: the value that failed, and the schema holding the failed keyword. */
  data?: unknown;
  parentSchema?: { type?: string; minimum?: number; maximum?: number; minLength?: number; maxLength?: number; pattern?: string; properties?: Record<string, unknown> };
}

const PART_NAMES: Record<string, string> = { body: 'body field', querystring: 'query parameter', params: 'path parameter', headers: 'header' };


/** What the value must be, from the failing schema: "an integer from 0 to 100", "1-255 characters". */
function expectation(issue: AjvIssue): string {
  const s = issue.parentSchema ?? {};
  const k = issue.keyword;
  if (k === 'type' && Array.isArray(issue.data)) return 'is given more than once; send it once';
  if ((k === 'type' || k === 'minimum' || k === 'maximum') && s.type === 'integer') {
    const range = s.minimum !== undefined && s.maximum !== undefined ? ` from ${s.minimum} to ${s.maximum}`
      : s.minimum !== undefined ? ` of at least ${s.minimum}` : s.maximum !== undefined ? ` of at most ${s.maximum}` : '';
    const exactly = s.maximum === Number.MAX_SAFE_INTEGER ? ' (the largest integer JavaScript holds exactly, Number.MAX_SAFE_INTEGER)' : '';
    return `must be an integer${range}${exactly}, written in plain decimal digits`;
  }
  if ((k === 'minLength' || k === 'maxLength') && (s.minLength !== undefined || s.maxLength !== undefined)) {
    return `must be ${s.minLength ?? 0}-${s.maxLength ?? 'any number of'} characters long`;
  }
  if (k === 'pattern' && s.pattern === STORABLE_TEXT) return 'must not contain the character U+0000 or a lone surrogate (an unpaired \\ud800-\\udfff escape)';
  if (k === 'pattern' && s.pattern === HTTP_DEDUPE_KEY_PATTERN) return 'must not contain control characters (U+0000-U+001F, U+007F) or a lone surrogate';
  return issue.message ?? 'is invalid';
}

/** Always names the field and what it must be: "Invalid query parameter 'limit': must be an integer from 1 to 100." */
function describeValidation(issue: AjvIssue | undefined, context: string | undefined): string {
  const params = issue?.params ?? {};
  if (issue?.keyword === 'additionalProperties') {
    const name = String(params.additionalProperty);
    const allowed = Object.keys(issue.parentSchema?.properties ?? {});
    if (context === 'querystring') {
      return `Unknown query parameter '${name}': ` +
        (allowed.length === 0 ? 'this endpoint takes no query parameters.' : `the allowed ones are ${allowed.join(', ')}.`);
    }
    return `Unknown property '${name}' in the ${context ?? 'body'}: ` +
      (allowed.length === 0 ? 'no properties are allowed.' : `the allowed ones are ${allowed.join(', ')}.`);
  }
  const path = (issue?.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
  const field = issue?.keyword === 'required' ? String(params.missingProperty) : path;
  if (field === '') {
    return context === 'body' ? 'The body must be a JSON object, such as {}.' : `Invalid ${PART_NAMES[context ?? ''] ?? 'request'}s.`;
  }
  const name = field === 'idempotency-key' ? 'Idempotency-Key' : field;
  const what = issue?.keyword === 'required' ? 'is required' : issue ? expectation(issue) : 'is invalid';
  return `Invalid ${PART_NAMES[context ?? ''] ?? 'field'} '${name}': ${what}.`;
}

/** Maps any error reaching Fastify's handler to an ApiError; null means "internal". */
export function toApiError(err: FastifyError | ApiError | Error, payloadLimit?: number, limitName = 'MAX_PAYLOAD_BYTES'): ApiError | null {
  if (err instanceof ApiError) return err;
  // A store that cannot be reached or written: 503 with Retry-After, never 500 (decisions.md §20).
  if (isStoreUnavailable(err)) return unavailableError(err);
  const fe = err as FastifyError & { validation?: AjvIssue[]; validationContext?: string };
  if (fe.validation) return new ApiError('invalid_request', describeValidation(fe.validation[0], fe.validationContext), {}, { cause: err });
  switch (fe.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('unsupported_media_type', 'Send the body as JSON with Content-Type: application/json.');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('payload_too_large', `The request body is larger than this service accepts (${limitName}${payloadLimit === undefined ? '' : ` = ${payloadLimit} bytes`}): send a smaller body.`);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('invalid_request', 'The body must be a JSON object; it was empty.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('invalid_request', 'The body\'s length differs from the Content-Length header: send Content-Length equal to the body\'s size in bytes.');
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

interface ParserError extends NodeJS.ErrnoException {
  reason?: string;
  rawPacket?: Buffer;
  bytesParsed?: number;
}

/** The name of the header on the line where Node's parser stopped, if that line is a header. */
function headerAt(err: ParserError): string | undefined {
  if (!err.rawPacket || err.bytesParsed === undefined) return undefined;
  const text = err.rawPacket.toString('latin1');
  const start = text.lastIndexOf('\n', Math.max(0, err.bytesParsed - 1)) + 1;
  const line = text.slice(start, start + 200);
  const m = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+)[ \t]*:/.exec(line);
  return start > 0 ? m?.[1] : undefined;
}

/** Node's parser errors, each naming the part of the request at fault and the fix. */
function describeParseError(err: ParserError): string {
  switch (err.code) {
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      return 'Malformed HTTP request: both Content-Length and Transfer-Encoding were sent; send only one of them.';
    case 'HPE_INVALID_CONTENT_LENGTH':
      return 'Malformed HTTP request: the Content-Length header must be one decimal number, sent once.';
    case 'HPE_INVALID_TRANSFER_ENCODING':
      return 'Malformed HTTP request: the Transfer-Encoding header must end with chunked and must not come with Content-Length; send one of them.';
    case 'HPE_INVALID_CHUNK_SIZE':
      return 'Malformed HTTP request: a chunk size of the chunked body is not hexadecimal digits.';
    case 'HPE_INVALID_EOF_STATE':
      return 'Malformed HTTP request: the connection ended before the whole request arrived; send as many body bytes as Content-Length says.';
    case 'HPE_INVALID_HEADER_TOKEN': {
      const name = headerAt(err);
      return `Malformed HTTP request: ${name === undefined ? 'a header' : `the ${name} header`} holds a character HTTP does not allow ` +
        '(a control character, or a space or other separator in a header name); remove it.';
    }
    case 'HPE_INVALID_METHOD':
      return 'Malformed HTTP request: the method is not one HTTP knows; use GET, POST or DELETE.';
    case 'HPE_INVALID_URL':
      return 'Malformed HTTP request: the URL in the request line holds a character HTTP does not allow; percent-encode it.';
    case 'HPE_INVALID_VERSION':
      return 'Malformed HTTP request: the HTTP version in the request line must be HTTP/1.0 or HTTP/1.1.';
  }
  return `Malformed HTTP request: ${err.reason ?? err.code ?? 'it could not be parsed'}; check the request line and the header syntax.`;
}

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
    ? HTTP_ERROR_BODY(431, 'invalid_request', 'Request headers are too large: send fewer or shorter headers (at most 16 KiB in all).')
    : code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? HTTP_ERROR_BODY(408, 'invalid_request', 'The request was not received in time: send the whole request, headers and body, without pausing.')
      : HTTP_ERROR_BODY(400, 'invalid_request', describeParseError(err as ParserError));
  socket.end(response);
}

/** HTTP/1.1 requires a Host header (RFC 9112 §3.2); without one the request is a 400 naming it. */
export function requireHostHeader(request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
  if (request.headers.host === undefined && request.raw.httpVersion === '1.1') {
    return done(new ApiError('invalid_request', 'The Host header is missing: an HTTP/1.1 request must send Host (the server\'s name and port).'));
  }
  done();
}

/** Fastify's hook for errors it raises before routing (an undecodable URL). */
export function frameworkErrors(error: FastifyError, _req: FastifyRequest, reply: FastifyReply): void {
  const e = toApiError(error) ?? new ApiError('invalid_request', 'Malformed request.');
  void sendApiError(reply, e);
}

export interface ErrorHandlingOptions {
  /** MAX_PAYLOAD_BYTES, for the 413 message. */
  maxPayloadBytes: number;
  /** The setting the 413 message names; MAX_PAYLOAD_BYTES unless a route has its own limit. */
  payloadLimitName?: string;
  /** MAX_DISCARD_BYTES: body bytes read and dropped after an early answer before the socket is closed. */
  maxDiscardBytes: number;
}

/**
 * For an error answered while the request body is still arriving (413; a credential refused before
 * the body was read; 415, 404, 405): "Connection: close", then keep reading and discarding the
 * rest. Node ends a closing response with socket.destroySoon(), which closes the socket as soon as
 * the answer is written; closing with unread input makes the kernel send a TCP reset, and a client
 * still writing its body then sees EPIPE or ECONNRESET instead of the answer. Here the answer is
 * followed by a FIN (the client reads it and the end of the stream) while its body is drained, up to
 * `maxDiscardBytes`; past that, or when the body has ended, the socket is closed. REQUEST_TIMEOUT_MS
 * still bounds the time.
 */
function closeAfterDrainingBody(request: FastifyRequest, reply: FastifyReply, maxDiscardBytes: number): void {
  const req = request.raw;
  const socket = req.socket as Socket | null;
  if (req.complete || !socket || reply.sent) return;
  reply.header('connection', 'close');
  socket.destroySoon = function destroyAfterDraining(this: Socket) {
    const close = () => {
      if (this.writableFinished) this.destroy();
      else this.once('finish', () => this.destroy());
    };
    if (this.writable) this.end();
    if (req.complete || this.destroyed) return close();
    let left = maxDiscardBytes;
    req.on('data', (chunk: Buffer) => {
      left -= chunk.length;
      if (left < 0) this.destroy();
    });
    req.once('end', close);
    req.once('error', () => this.destroy());
    req.resume();
  };
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
      if (e.status >= 500 && !overBudget) request.log.error({ err }, 'request failed');
      // /readyz stays not ok for a while after the store failed to write (health.ts); a full capture budget is not that.
      if (e.code === 'unavailable' && !overBudget) writeHealthOf(request.server)?.failed();
      return sendApiError(reply, e);
    }
    request.log.error({ err }, 'unhandled error');
    return sendInternal(reply);
  };
}

/** Error handler, 404 handler and 405 detection (a shadow router knows every path and its methods). */
export function registerErrorHandling(app: FastifyInstance, opts: ErrorHandlingOptions): void {
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

  app.setErrorHandler(errorHandler(opts));

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
      return sendApiError(reply, new ApiError('method_not_allowed', `${request.method} is not allowed here; use ${allowed.join(' or ')}.`, { allow: allowed.join(', ') }));
    }
    return sendApiError(reply, new ApiError('not_found', 'Not found: no such route.'));
  });
}
