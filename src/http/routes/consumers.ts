// GET …/consumers and DELETE …/consumers/{name} (design.md, "Reading without loss"): the named consumers of an
// address and their positions. Reads set positions (consumer=NAME on GET …/events, the stream and
// MCP); these routes only show and forget them.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { CONSUMER_NAME_PATTERN, consumerName, MAX_CONSUMERS_PER_ADDRESS } from '../../consumers/consumers.js';
import { authenticatedAddress, requireReadToken } from '../plugins/authentication.js';
import type { AppDeps } from '../route-deps.js';
import { AddressParams, BEARER, errorResponses } from '../schemas.js';

export const Consumer = Type.Object(
  {
    name: Type.String({ pattern: CONSUMER_NAME_PATTERN, description: "The consumer's name, as given in consumer=NAME." }),
    cursor: Type.Integer({ minimum: 0, description: 'Its position: its next read without after starts after this sequence.' }),
    updated_at: Type.String({ format: 'date-time', description: 'When the position was last stored (ISO 8601).' }),
  },
  { additionalProperties: false },
);

export const ConsumerList = Type.Object(
  {
    consumers: Type.Array(Consumer, { description: `The address's consumers by name (at most ${MAX_CONSUMERS_PER_ADDRESS}).` }),
  },
  { additionalProperties: false },
);

const ConsumerParams = Type.Object({ addressId: AddressParams.properties.addressId, name: Type.String({ description: "The consumer's name." }) });

export const consumerRoutes =
  ({ service, consumers }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    const auth = requireReadToken(service);

    app.get(
      '/api/v1/addresses/:addressId/consumers',
      {
        onRequest: auth,
        schema: {
          operationId: 'listConsumers',
          summary: 'List the named consumers and their positions',
          description:
            'Every consumer a read named (consumer=NAME), with the position its next read starts after and when that was stored. ' +
            'Consumers are independent of acknowledgements.',
          tags: ['events'],
          security: BEARER,
          params: AddressParams,
          response: { 200: ConsumerList, ...errorResponses(401, 404) },
        },
      },
      async (request) => {
        const list = await consumers.list(authenticatedAddress(request));
        return { consumers: list.map((c) => ({ name: c.name, cursor: c.cursor, updated_at: new Date(c.updatedAt).toISOString() })) };
      },
    );

    app.delete(
      '/api/v1/addresses/:addressId/consumers/:name',
      {
        onRequest: auth,
        schema: {
          operationId: 'deleteConsumer',
          summary: 'Forget a named consumer',
          description: "Deletes the consumer's stored position; a later read with its name starts at 0 again. 404 when no consumer has that name.",
          tags: ['events'],
          security: BEARER,
          params: ConsumerParams,
          response: { 204: { type: 'null', description: 'Forgotten; empty body.' }, ...errorResponses(401, 404) },
        },
      },
      async (request, reply) => {
        const address = authenticatedAddress(request);
        await consumers.remove(address, consumerName(request.params.name, "path parameter 'name'"));
        return reply.code(204).send(null);
      },
    );
  };
