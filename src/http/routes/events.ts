import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { LongPoll } from '../../domain/long-poll.js';
import type { Page } from '../../domain/model.js';
import { eventJson, eventPageBody } from '../../domain/representation.js';
import { EPOCH_RESPONSE_HEADERS } from '../../epoch/epoch-headers.js';
import { sendJsonText } from '../json-text.js';
import { authenticatedAddress, requireReadToken } from '../plugins/authentication.js';
import { onlyTheseParameters, READ_OPTION_PROPERTIES, readOptions } from '../read-options.js';
import type { AppDeps } from '../route-deps.js';
import { AddressParams, BEARER, EventPage, EventParams, EventResponse, EventsQuery, errorResponses, waitErrorResponses } from '../schemas.js';

/** GET /api/v1/addresses/{id}/events's parameters, with the filter and consumer of every read. */
const EVENTS_READ_PROPERTIES = { ...EventsQuery.properties, ...READ_OPTION_PROPERTIES };
export const EventsReadQuery = Type.Object(EVENTS_READ_PROPERTIES, { additionalProperties: false, description: onlyTheseParameters(EVENTS_READ_PROPERTIES) });

export const eventRoutes =
  ({ service, consumers }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    const auth = requireReadToken(service);

    app.get(
      '/api/v1/addresses/:addressId/events',
      {
        onRequest: auth,
        schema: {
          operationId: 'listEvents',
          summary: 'Read the ordered event queue',
          description:
            'Events with sequence > after, ascending, acknowledged or not; use next_cursor as the next after. With wait > 0 the request is ' +
            'held until an event arrives or wait seconds pass (empty page); a rotation of the read token it was sent with ends it at once with 401 credentials_rotated. Long-polling, filters, named consumers and the scan bound: ' +
            '/llms-full.txt, sections "Read the queue" and "Filters and named consumers".',
          tags: ['events'],
          security: BEARER,
          params: AddressParams,
          querystring: EventsReadQuery,
          response: { 200: { ...EventPage, headers: EPOCH_RESPONSE_HEADERS }, ...waitErrorResponses(400, 401, 404, 409) },
        },
      },
      (request, reply) => {
        // Not async, and nothing returned: Fastify then waits for reply.send(). (An async handler
        // returning the reply would make Fastify await it as a thenable, attaching a stream-finished
        // watcher to every held response.) While a long-poll waits, nothing here is suspended: 10,000
        // held polls cost their sockets, the request objects and one small LongPoll each.
        // ajv's useDefaults has filled in every omitted parameter (they are optional only to callers).
        const query = request.query as Required<typeof request.query>;
        const { filter, consumer, afterGiven } = readOptions(request);
        const address = authenticatedAddress(request);
        const holds = query.wait > 0;
        let poll: LongPoll | undefined;
        let gone = false;
        // The client going away ends the wait and frees the waiter.
        const onClose = () => {
          gone = true;
          poll?.cancel();
        };
        if (holds) reply.raw.once('close', onClose);
        const answer = (err: unknown, page: Page | undefined) => {
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
        };
        const read = (after: number) => {
          poll = service.pollEvents(address, { ...query, after, filter }, answer);
          if (gone) poll.cancel();
        };
        if (consumer === undefined) return read(query.after);
        // The consumer's position is stored (when after is given) before the read, so before the answer.
        consumers.start(address, consumer, afterGiven ? query.after : undefined).then(read, (err: unknown) => answer(err, undefined));
      },
    );

    app.post(
      '/api/v1/addresses/:addressId/events/:eventId/ack',
      {
        onRequest: auth,
        schema: {
          operationId: 'ackEvent',
          summary: 'Acknowledge an event',
          description:
            'Marks the event handled. Idempotent: a second ack returns 200 and the same acknowledged_at. Send no body ' +
            '(one sent anyway is parsed if it claims to be JSON, so malformed JSON is 400 and another Content-Type 415).',
          tags: ['events'],
          security: BEARER,
          params: EventParams,
          response: { 200: EventResponse, ...errorResponses(401, 404, 413, 415) },
        },
      },
      async (request, reply) => {
        const event = await service.ackEvent(authenticatedAddress(request), request.params.eventId);
        return sendJsonText(reply, `{"event":${eventJson(event)}}`);
      },
    );

    app.post(
      '/api/v1/addresses/:addressId/events/:eventId/release',
      {
        onRequest: auth,
        schema: {
          operationId: 'releaseEvent',
          summary: 'Release a quarantined event',
          description:
            'An event the sender policy quarantined becomes an ordinary one at its own sequence: default reads, streams, waits, claims and consumers ' +
            'whose position is before it read it; a reader already past it sees it only by reading back (after=, or state=all). ' +
            'Idempotent: a second release returns 200 and the same released_at; an event never quarantined is 409 not_quarantined. ' +
            'To dismiss one instead, acknowledge it. Send no body. Guide: /llms-full.txt, "Sender policy and quarantine".',
          tags: ['events'],
          security: BEARER,
          params: EventParams,
          response: { 200: EventResponse, ...errorResponses(401, 404, 409, 413, 415) },
        },
      },
      async (request, reply) => {
        const event = await service.releaseEvent(authenticatedAddress(request), request.params.eventId);
        return sendJsonText(reply, `{"event":${eventJson(event)}}`);
      },
    );
  };
