// Broken HTTP (design.md, "Errors"): what Node's parser refuses before a request exists is answered
// on the raw socket in the documented error shape, naming the part of the request at fault.
import type { Socket } from 'node:net';
import { type ERROR_CATALOGUE, errorBody } from '../../domain/errors.js';

const HTTP_ERROR_BODY = (status: number, code: keyof typeof ERROR_CATALOGUE, message: string) => {
  const body = JSON.stringify(errorBody(code, message));
  return (
    `HTTP/1.1 ${status} ${status === 400 ? 'Bad Request' : status === 408 ? 'Request Timeout' : status === 431 ? 'Request Header Fields Too Large' : 'Error'}\r\n` +
    `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
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
      return (
        `Malformed HTTP request: ${name === undefined ? 'a header' : `the ${name} header`} holds a character HTTP does not allow ` +
        '(a control character, or a space or other separator in a header name); remove it.'
      );
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
  const response =
    code === 'HPE_HEADER_OVERFLOW'
      ? HTTP_ERROR_BODY(431, 'invalid_request', 'Request headers are too large: send fewer or shorter headers (at most 16 KiB in all).')
      : code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? HTTP_ERROR_BODY(408, 'invalid_request', 'The request was not received in time: send the whole request, headers and body, without pausing.')
        : HTTP_ERROR_BODY(400, 'invalid_request', describeParseError(err as ParserError));
  socket.end(response);
}
