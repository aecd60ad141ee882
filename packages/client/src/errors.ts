// The one error class the client throws.

/**
 * Every failure the client reports. `status` is the HTTP status (0 when no response came),
 * `code` the API's stable error code (`network_error`, `bad_response` when there was none).
 */
export class ReturnAddressError extends Error {
  override readonly name = 'ReturnAddressError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
