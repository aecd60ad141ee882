import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { eventJson, eventPageJson } from '../../domain/representation.js';
import { authenticatedAddress, requireReadToken } from '../plugins/authentication.js';
import { sendJsonText } from '../json-text.js';
import type { AppDeps } from '../route-deps.js';
import { BEARER, EventPage, EventParams, EventResponse, EventsQuery, AddressParams, errorResponses } from '../schemas.js';

export const eventRoutes = ({ service }: AppDeps): FastifyPluginAsyncTypebox => async (app) => {
  const auth = requireReadToken(service);

  app.get('/api/v1/addresses/:addressId/events', {
    onRequest: auth,
    schema: {
      summary: 'Read the ordered event queue',
      description: 'Events with sequence > after, ascending, acknowledged or not. Use next_cursor as the next after. ' +
        'With wait > 0 and nothing after the cursor, the request is held until an event arrives (it returns within milliseconds), ' +
        'or wait seconds pass (empty page). Deleting the address ends the wait with 404; a server shutdown ends it with an empty page.',
      tags: ['events'],
      security: BEARER,
      params: AddressParams,
      querystring: EventsQuery,
      response: { 200: EventPage, ...errorResponses(400, 401, 404) },
    },
  }, async (request, reply) => {
    if (request.query.wait === 0) return sendJsonText(reply, eventPageJson(await service.listEvents(authenticatedAddress(request), request.query)));
    // A long-poll: the client going away ends it and frees the waiter. (Only here: an
    // AbortController and its abort() cost more than a whole cached page read.)
    const closed = new AbortController();
    const onClose = () => closed.abort();
    reply.raw.once('close', onClose);
    try {
      const page = await service.listEvents(authenticatedAddress(request), request.query, closed.signal);
      return sendJsonText(reply, eventPageJson(page));
    } finally {
      reply.raw.removeListener('close', onClose);
    }
  });

  app.post('/api/v1/addresses/:addressId/events/:eventId/ack', {
    onRequest: auth,
    schema: {
      summary: 'Acknowledge an event',
      description: 'Marks the event handled. Idempotent: a second ack returns 200 and the same acknowledged_at. No body.',
      tags: ['events'],
      security: BEARER,
      params: EventParams,
      response: { 200: EventResponse, ...errorResponses(401, 404) },
    },
  }, async (request, reply) => {
    const event = await service.ackEvent(authenticatedAddress(request), request.params.eventId);
    return sendJsonText(reply, `{"event":${eventJson(event)}}`);
  });
};
