import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { errorBody } from '../../domain/errors.js';
import type { AppDeps } from '../route-deps.js';
import { ErrorBody, NO_AUTH, errorResponses } from '../schemas.js';

const Status = Type.Object({ status: Type.Literal('ok') }, { additionalProperties: false });

/**
 * Probes come every few seconds from orchestrators, proxies and HEALTHCHECKs: Fastify's request
 * lines for them (info) are disabled (app.ts's disableRequestLogging) and one debug line per probe
 * is written instead. A failed readiness check still warns.
 */
export function isHealthProbe(req: { url: string }): boolean {
  return /^\/(healthz|readyz)(\?|$)/.test(req.url);
}

async function logProbe(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  request.log.debug({ req: request, res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime }, 'health probe answered');
}

export const healthRoutes = ({ store }: AppDeps): FastifyPluginAsyncTypebox => async (app) => {
  app.get('/healthz', {
    onResponse: logProbe,
    schema: {
      operationId: 'getHealth',
      summary: 'Liveness: the process is up',
      description: 'Answers 200 {"status":"ok"} while the process runs; it does not touch storage.',
      tags: ['operations'],
      security: NO_AUTH,
      response: { 200: Status, ...errorResponses() },
    },
  }, async () => ({ status: 'ok' as const }));

  app.get('/readyz', {
    onResponse: logProbe,
    schema: {
      operationId: 'getReadiness',
      summary: 'Readiness: storage is reachable',
      description: 'Answers 200 {"status":"ok"} while the store (and, on PostgreSQL, the LISTEN connection) answers; 503 otherwise.',
      tags: ['operations'],
      security: NO_AUTH,
      response: { 200: Status, 503: { ...ErrorBody, description: 'Storage is unreachable (code internal).' }, ...errorResponses() },
    },
  }, async (request, reply) => {
    try {
      await store.ping();
      return { status: 'ok' as const };
    } catch (err) {
      request.log.warn({ err }, 'readiness check failed');
      return reply.code(503).send(errorBody('internal', 'Storage is unreachable.'));
    }
  });
};
