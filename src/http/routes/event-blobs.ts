// GET /api/v1/addresses/{id}/events/{eventId}/raw and …/attachments/{n} (design.md, "Bounded work"): the
// bytes stored beside an event (every mail's raw message, every attachment, a captured body too
// large to sit inline), exactly, with their content type, Content-Length and ETag: "<sha256>". Served a chunk at a time from the store (blobs/event-blob.ts), so a 25 MiB
// body is never held whole in JS, and a slow reader holds one chunk (the socket's backpressure).
// The bytes are a sender's: they are sent as an attachment, never sniffed and sandboxed, so a
// captured text/html body cannot run as a page of this origin.
import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { BlobName } from '../../blobs/event-blob.js';
import { authenticatedAddress, requireReadToken } from '../plugins/authentication.js';
import type { AppDeps } from '../route-deps.js';
import { AddressIdParam, BEARER, errorResponses } from '../schemas.js';

const EventId = Type.String({ description: 'Event id (evt_…).' });
const RawParams = Type.Object({ addressId: AddressIdParam, eventId: EventId });
const AttachmentParams = Type.Object({
  addressId: AddressIdParam,
  eventId: EventId,
  n: Type.String({ pattern: '^(0|[1-9][0-9]{0,5})$', description: 'The index of the attachment in data.attachments (from 0).' }),
});

const BYTES = {
  description: 'The exact bytes, with the Content-Type they were stored with, Content-Length and ETag: "<sha256 hex>" (the same sha256 as in the event).',
  content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
  headers: {
    ETag: Type.String({ description: "The bytes' SHA-256, lower-case hex, in quotes." }),
    'Content-Length': Type.Integer({ minimum: 0, description: 'The size of the bytes.' }),
  },
};

export const eventBlobRoutes =
  ({ service }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    const auth = requireReadToken(service);

    const send = async (eventId: string, name: BlobName, ifNoneMatch: string | undefined, reply: FastifyReply) => {
      const blob = await service.openBlob(authenticatedAddress(reply.request), eventId, name);
      const etag = `"${blob.sha256}"`;
      reply
        .header('etag', etag)
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', 'sandbox')
        .header('content-disposition', 'attachment')
        .header('cache-control', 'private, no-cache');
      if (ifNoneMatch?.split(',').some((t) => t.trim() === etag || t.trim() === '*')) return reply.code(304).send();
      return reply
        .code(200)
        .type(blob.contentType)
        .header('content-length', String(blob.size))
        .send(Readable.from(blob.chunks(), { objectMode: false }));
    };

    app.get(
      '/api/v1/addresses/:addressId/events/:eventId/raw',
      {
        onRequest: auth,
        schema: {
          operationId: 'getEventRaw',
          summary: 'Download the raw bytes of an event',
          description:
            'The whole RFC 822 message of every email event, or the body of a captured request too large to sit inline (MAX_EVENT_BYTES): ' +
            'the event names it as data.raw.url. 404 when the event has no such bytes. Honours If-None-Match (304).',
          tags: ['events'],
          security: BEARER,
          params: RawParams,
          response: { 200: BYTES, 304: { description: 'If-None-Match matched the ETag.', type: 'null' }, ...errorResponses(401, 404) },
        },
      },
      async (request, reply) => send(request.params.eventId, 'raw', request.headers['if-none-match'], reply),
    );

    app.get(
      '/api/v1/addresses/:addressId/events/:eventId/attachments/:n',
      {
        onRequest: auth,
        schema: {
          operationId: 'getEventAttachment',
          summary: 'Download an attachment of an event',
          description:
            'Attachment n (the index in data.attachments, whose entry names this url and its sha256), whether or not its bytes also sit inline ' +
            'as content_base64. 404 when there is no such attachment. Honours If-None-Match (304).',
          tags: ['events'],
          security: BEARER,
          params: AttachmentParams,
          response: { 200: BYTES, 304: { description: 'If-None-Match matched the ETag.', type: 'null' }, ...errorResponses(400, 401, 404) },
        },
      },
      async (request, reply) => send(request.params.eventId, `attachments/${Number(request.params.n)}`, request.headers['if-none-match'], reply),
    );
  };
