// Capture body bytes being received by all requests together (MAX_INFLIGHT_CAPTURE_BYTES).
// Each capture may be MAX_CAPTURE_BYTES (25 MiB), and a client that sends slowly, or not at all,
// holds what it sent so far: 150 paused uploads held +3.2 GB for 30 s. Bytes are taken from this
// one budget as they arrive and given back when the request's answer is done (sent, or the
// connection gone); a request whose bytes would pass it is answered 503 `unavailable` with
// Retry-After, as SMTP answers 452 past SMTP_MAX_BUFFERED_BYTES.
import { ByteBudget } from '../domain/byte-budget.js';
import { ApiError } from '../domain/errors.js';

/** How long a client refused for lack of room is told to wait. */
export const INFLIGHT_RETRY_AFTER_SECONDS = 5;

/**
 * The 503 of a full budget: not a store failure (so /readyz is not turned off by it), and answered
 * without draining the refused body (reading it is what the budget refuses).
 */
export class CaptureBudgetExceeded extends ApiError {}

export class InflightCaptureBudget extends ByteBudget {
  refusal(): ApiError {
    return new CaptureBudgetExceeded(
      'unavailable',
      `Too many capture bytes are being received right now (MAX_INFLIGHT_CAPTURE_BYTES, ${this.max} bytes across all requests); retry in ${INFLIGHT_RETRY_AFTER_SECONDS} s.`,
      { 'retry-after': String(INFLIGHT_RETRY_AFTER_SECONDS) },
    );
  }

  /**
   * Counts a request body against the budget as it arrives, without taking the stream over (the
   * framework keeps reading it, and keeps draining it after an early error). A declared
   * Content-Length that cannot fit is refused before a byte is read (returned); a body whose bytes
   * pass the budget later fails with the refusal through the stream's 'error'. The returned
   * `release` gives every byte back; call it once the answer is done with.
   */
  meter(payload: NodeJS.ReadableStream & { emit(event: 'error', err: Error): boolean }, declaredLength: number | undefined): ApiError | (() => void) {
    if (declaredLength !== undefined && this.held + declaredLength > this.max) return this.refusal();
    let held = 0;
    let refused = false;
    let released = false;
    const onData = (chunk: Buffer) => {
      if (released || refused) return;
      if (!this.tryTake(chunk.length)) {
        refused = true;
        payload.removeListener('data', onData);
        payload.emit('error', this.refusal());
        return;
      }
      held += chunk.length;
    };
    payload.on('data', onData);
    return () => {
      if (released) return;
      released = true;
      payload.removeListener('data', onData);
      this.release(held);
    };
  }
}
