import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { errorBody } from '../../domain/errors.js';
import type { AppDeps } from '../route-deps.js';
import { ErrorBody, NO_AUTH, errorResponses } from '../schemas.js';

const Status = Type.Object({ status: Type.String() });

export const healthRoutes = ({ store }: AppDeps): FastifyPluginAsyncTypebox => async (app) => {
  app.get('/healthz', {
    schema: { summary: 'Liveness: the process is up', tags: ['operations'], security: NO_AUTH, response: { 200: Status } },
  }, async () => ({ status: 'ok' }));

  app.get('/readyz', {
    schema: {
      summary: 'Readiness: storage is reachable',
      tags: ['operations'],
      security: NO_AUTH,
      response: { 200: Status, 503: { ...ErrorBody, description: 'Storage is unreachable (code internal).' }, ...errorResponses() },
    },
  }, async (request, reply) => {
    try {
      await store.ping();
      return { status: 'ok' };
    } catch (err) {
      request.log.warn({ err }, 'readiness check failed');
      return reply.code(503).send(errorBody('internal', 'Storage is unreachable.'));
    }
  });
};
