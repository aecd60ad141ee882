import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { errorBody } from '../../domain/errors.js';
import { RepeatedWarning, UNAVAILABLE_RETRY_AFTER_SECONDS } from '../../storage/store-unavailable.js';
import { writeHealthOf } from '../plugins/api-error-handler.js';
import type { AppDeps } from '../route-deps.js';
import { errorResponses, NO_AUTH } from '../schemas.js';

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

export const healthRoutes =
  ({ store }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    const readinessWarnings = new RepeatedWarning();
    app.get(
      '/healthz',
      {
        onResponse: logProbe,
        schema: {
          operationId: 'getHealth',
          summary: 'Liveness: the process is up',
          description: 'Answers 200 {"status":"ok"} while the process runs; it does not touch storage.',
          tags: ['operations'],
          security: NO_AUTH,
          response: { 200: Status, ...errorResponses() },
        },
      },
      async () => ({ status: 'ok' as const }),
    );

    app.get(
      '/readyz',
      {
        onResponse: logProbe,
        schema: {
          operationId: 'getReadiness',
          summary: 'Readiness: storage is reachable and writable',
          description:
            'Answers 200 {"status":"ok"} while the store (and, on PostgreSQL, the LISTEN connection) answers and can write; 503 unavailable with ' +
            'Retry-After otherwise: unreachable, a disk below the free space one event needs (SQLite), or a write refused by the store in the last 10 s.',
          tags: ['operations'],
          security: NO_AUTH,
          response: {
            200: Status,
            ...errorResponses(),
            503: { ...errorResponses()[503], description: 'Storage cannot be reached or written (code unavailable), with Retry-After.' },
          },
        },
      },
      async (request, reply) => {
        const unready = (message: string) =>
          reply.code(503).header('retry-after', String(UNAVAILABLE_RETRY_AFTER_SECONDS)).send(errorBody('unavailable', message));
        const started = Date.now();
        try {
          await store.ping();
        } catch (err) {
          readinessWarnings.report(request.log, { err }, 'readiness check failed');
          return unready(`Storage is unreachable or cannot write: ${err instanceof Error && err.name === 'StoreNotWritable' ? err.message : 'see the log'}.`);
        }
        // A ping that started after the last refused write proves the store is back (PostgreSQL's
        // ping checks it takes writes): readiness follows within one probe, not a 10 s window.
        writeHealthOf(app)?.provenSince(started);
        const age = writeHealthOf(app)?.recentFailure();
        if (age !== undefined) return unready(`Storage refused a write ${Math.round(age / 1000)} s ago.`);
        return { status: 'ok' as const };
      },
    );
  };
