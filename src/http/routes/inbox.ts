import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { utf8HeaderValue } from '../../domain/header-text.js';
import { eventJson } from '../../domain/representation.js';
import { sendJsonText } from '../json-text.js';
import { authenticatedAddress, requireInboxSecret } from '../plugins/authentication.js';
import { clientControls } from '../plugins/client-controls.js';
import type { AppDeps } from '../route-deps.js';
import { CreateEventBody, EventDeliveryResponse, errorResponses, InboxHeaders, InboxParams, NO_AUTH } from '../schemas.js';

/** Before the header is validated (its length counts characters) and compared with dedupe_key. */
function idempotencyKeyAsUtf8(request: FastifyRequest, _reply: FastifyReply, done: () => void): void {
  const key = request.headers['idempotency-key'];
  if (typeof key === 'string') request.headers['idempotency-key'] = utf8HeaderValue(key);
  done();
}

export const inboxRoutes =
  (deps: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    const { service, config } = deps;
    const controls = clientControls(deps);
    app.post(
      '/api/v1/inbox/:addressId/:secret',
      {
        onRequest: [...controls.blocked, requireInboxSecret(service), ...controls.deliveryLimit, idempotencyKeyAsUtf8],
        // The path's two parameters are the credential, checked by requireInboxSecret before anything
        // else: Fastify does not validate them again on every delivery (bench/README.md, "Where each µs
        // of a delivery goes"); the document still describes them.
        config: { swaggerTransform: ({ schema, url }) => ({ schema: { ...schema, params: InboxParams }, url }) },
        schema: {
          operationId: 'deliverEvent',
          summary: 'Deliver an event (write-only)',
          description:
            'The secret in the path is the only credential; it cannot read the queue. A 2xx means the event is durably stored; ' +
            `a repeated Idempotency-Key (or dedupe_key) answers 200 with the original event. JSON, at most ${config.maxPayloadBytes} bytes. ` +
            'Order of checks, idempotency and every error: /llms-full.txt, section "Deliver".',
          tags: ['inbox'],
          security: NO_AUTH,
          headers: InboxHeaders,
          body: CreateEventBody,
          response: {
            200: { ...EventDeliveryResponse, description: 'A repeat of an idempotency key: the original event, duplicate: true.' },
            202: { ...EventDeliveryResponse, description: 'A new event, queued and durably stored; duplicate: false.' },
            ...errorResponses(400, ...(config.blockCidrs.length > 0 ? [403] : []), 404, 409, 410, 413, 415, 429),
          },
        },
      },
      async (request, reply) => {
        const { event, duplicate } = await service.deliverToInbox(authenticatedAddress(request), request.body, request.headers['idempotency-key']);
        return sendJsonText(reply, `{"event":${eventJson(event)},"duplicate":${duplicate}}`, duplicate ? 200 : 202);
      },
    );
  };
