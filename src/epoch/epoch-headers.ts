// The epoch and the address's last sequence on every answer that hands out events (design.md,
// "Store epoch"). A page's body cannot gain fields (the shared conformance suite deep-equals an
// empty page to exactly {events, next_cursor, has_more}), so they travel as response headers:
// `Return-Address-Epoch` and `Return-Address-Last-Sequence`; a stream names them in its first
// comment too. The last sequence is read after the page, so it is never below the page's events.
import type { onSendHookHandler } from 'fastify';
import type { Log } from '../domain/ports.js';
import type { EpochStore } from './epoch-store.js';

export const EPOCH_HEADER = 'return-address-epoch';
export const LAST_SEQUENCE_HEADER = 'return-address-last-sequence';

/** The two headers as OpenAPI response headers (for a 200 that carries events). */
export const EPOCH_RESPONSE_HEADERS = {
  'Return-Address-Epoch': {
    type: 'string',
    description:
      "The store's epoch: a random id replaced by a restore. When it differs from the one you saw, sequences may have been reused: re-read the address from the start, skipping event ids you handled.",
  },
  'Return-Address-Last-Sequence': {
    type: 'integer',
    description: "The address's highest sequence so far (0: none). A cursor above it is ahead of the queue (after a restore), not waiting for it.",
  },
} as const;

/** The routes (method and template) whose 200 answers carry the headers. */
const ROUTES = new Set(['GET /api/v1/addresses/:addressId/events', 'POST /api/v1/addresses/:addressId/claims']);

/** The header values for one address; null when the address is gone. */
export async function epochHeaderValues(epochs: EpochStore, addressId: string): Promise<{ epoch: string; lastSequence: number } | null> {
  const [epoch, lastSequence] = await Promise.all([epochs.epoch(), epochs.lastSequence(addressId)]);
  return lastSequence === null ? null : { epoch, lastSequence };
}

/**
 * An onSend hook that adds the headers to a 200 of the routes above. A store that fails to answer
 * here leaves them out (and logs) rather than failing a page already read.
 */
export function epochHeadersHook(epochs: EpochStore, log: Log): onSendHookHandler {
  return (request, reply, payload, done) => {
    if (reply.statusCode !== 200 || !ROUTES.has(`${request.method} ${request.routeOptions.url}`)) return done(null, payload);
    const { addressId } = request.params as { addressId: string };
    epochHeaderValues(epochs, addressId).then(
      (v) => {
        if (v) reply.header(EPOCH_HEADER, v.epoch).header(LAST_SEQUENCE_HEADER, String(v.lastSequence));
        done(null, payload);
      },
      (err: unknown) => {
        log.warn({ err, addressId }, 'epoch headers left out: the store did not answer');
        done(null, payload);
      },
    );
  };
}
