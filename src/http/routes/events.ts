import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { eventJson, eventPageBody } from '../../domain/representation.js';
import { authenticatedAddress, requireReadToken } from '../plugins/authentication.js';
import { sendJsonText } from '../json-text.js';
import type { AppDeps } from '../route-deps.js';
import { BEARER, EventPage, EventParams, EventResponse, EventsQuery, AddressParams, errorResponses } from '../schemas.js';

export const eventRoutes = ({ service }: AppDeps): FastifyPluginAsyncTypebox => async (app) => {
  const auth = requireReadToken(service);

  app.get('/api/v1/addresses/:addressId/events', {
    onRequest: auth,
    schema: {
      operationId: 'listEvents',
      summary: 'Read the ordered event queue',
      description: 'Events with sequence > after, ascending, acknowledged or not. Use next_cursor as the next after. ' +
        'With wait > 0 and nothing after the cursor, the request is held until an event arrives (it returns within milliseconds), ' +
        'or wait seconds pass (empty page). Deleting the address ends the wait with 404; a server shutdown ends it with an empty page. ' +
        'after takes any integer up to 9007199254740991; a query parameter other than after, limit and wait is 400 invalid_request naming it.',
      tags: ['events'],
      security: BEARER,
      params: AddressParams,
      querystring: EventsQuery,
      response: { 200: EventPage, ...errorResponses(400, 401, 404) },
    },
  }, (request, reply) => {
    // Not async, and nothing returned: Fastify then waits for reply.send(). (An async handler
    // returning the reply would make Fastify await it as a thenable, attaching a stream-finished
    // watcher to every held response.) While a long-poll waits, nothing here is suspended: 10,000
    // held polls cost their sockets, the request objects and one small LongPoll each.
    // ajv's useDefaults has filled in every omitted parameter (they are optional only to callers).
    const query = request.query as Required<typeof request.query>;
    const holds = query.wait > 0;
    const poll = service.pollEvents(authenticatedAddress(request), query, (err, page) => {
      if (holds) reply.raw.removeListener('close', onClose);
      // This runs from a store read's completion, a timer or a wake-up: whatever it throws would
      // be an uncaught exception that ends the process, so rendering fails into the reply instead.
      let body: Buffer | undefined;
      try {
        body = page && eventPageBody(page);
      } catch (renderError) {
        err = renderError;
      }
      if (body) sendJsonText(reply, body);
      // Through the error handler, as a thrown error would go: not_found, or a logged 500.
      else (reply as FastifyReply).send(err);
    });
    // The client going away ends the wait and frees the waiter. (The callback above never runs
    // before this line: the first read is asynchronous.)
    const onClose = () => poll.cancel();
    if (holds) reply.raw.once('close', onClose);
  });

  app.post('/api/v1/addresses/:addressId/events/:eventId/ack', {
    onRequest: auth,
    schema: {
      operationId: 'ackEvent',
      summary: 'Acknowledge an event',
      description: 'Marks the event handled. Idempotent: a second ack returns 200 and the same acknowledged_at. Send no body ' +
        '(one sent anyway is parsed if it claims to be JSON, so malformed JSON is 400 and another Content-Type 415).',
      tags: ['events'],
      security: BEARER,
      params: EventParams,
      response: { 200: EventResponse, ...errorResponses(401, 404, 413, 415) },
    },
  }, async (request, reply) => {
    const event = await service.ackEvent(authenticatedAddress(request), request.params.eventId);
    return sendJsonText(reply, `{"event":${eventJson(event)}}`);
  });
};
