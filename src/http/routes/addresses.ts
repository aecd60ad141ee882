import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { clientKey } from '../../domain/client-key.js';
import { addressView } from '../../domain/representation.js';
import { OPTIONAL_BODY } from '../openapi-document.js';
import { authenticatedAddress, requireReadToken } from '../plugins/authentication.js';
import { clientControls } from '../plugins/client-controls.js';
import { requireCreateToken } from '../plugins/create-token.js';
import type { AppDeps } from '../route-deps.js';
import { AddressParams, AddressResponse, BEARER, CreateAddressBody, CreateAddressResponse, errorResponses, NO_AUTH } from '../schemas.js';

/** The security requirement of a create when CREATE_TOKENS is set (scheme `createToken`, declared in app.ts). */
const CREATE_TOKEN = [{ createToken: [] }];

const CREDENTIALS_NOTE = 'Store read_token now: it is shown only once and cannot be recovered.';

export const addressRoutes =
  (deps: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    const { config, service } = deps;
    const auth = requireReadToken(service);
    // BLOCK_CIDRS first, then CREATE_TOKENS: a blocked network is refused whatever it sends.
    const createChecks = [...clientControls(deps).blocked, ...(config.createTokens.length > 0 ? [requireCreateToken(config.createTokens)] : [])];

    // CREATE_TOKENS set: the create needs one of them (401 otherwise), and the document says so.
    const createTokens = config.createTokens.length > 0;

    app.post(
      '/api/v1/addresses',
      {
        ...(createChecks.length > 0 ? { onRequest: createChecks } : {}),
        // The body is optional: no body (or an empty one) means the same as {}. JSON null is not.
        preValidation: async (request) => {
          if (request.body === undefined) request.body = {};
        },
        schema: {
          operationId: 'createAddress',
          summary: 'Create a return address',
          description:
            'No account and no API key. Persist the whole response: credentials.read_token is shown only this once. ' +
            `Rate-limited per client IP (default ${config.createRateLimit} per ${config.createRateWindowSeconds} s; 429 rate_limited with Retry-After; refused attempts do not count).` +
            (createTokens
              ? " This instance requires a create token: Authorization: Bearer <one of the operator's CREATE_TOKENS>, else 401 unauthorized."
              : '') +
            (config.maxTtlSeconds !== undefined
              ? ` expires_in_seconds may be at most ${config.maxTtlSeconds} here (MAX_TTL_SECONDS); more is 400 invalid_request naming the cap.`
              : ''),
          tags: ['addresses'],
          security: createTokens ? CREATE_TOKEN : NO_AUTH,
          [OPTIONAL_BODY]: true,
          body: CreateAddressBody,
          response: {
            201: CreateAddressResponse,
            ...errorResponses(400, ...(createTokens ? [401] : []), ...(config.blockCidrs.length > 0 ? [403] : []), 413, 415, 429),
          },
        },
      },
      async (request, reply) => {
        // Keyed on the client's network (an IPv6 /64 by default), not its exact address: domain/client-key.ts.
        const created = await service.createAddress(request.body ?? {}, clientKey(request.ip, config.ipv6PrefixBits));
        const id = created.address.id;
        return reply.code(201).send({
          address: addressView(created.address, config.emailDomain),
          credentials: { read_token: created.readToken, note: CREDENTIALS_NOTE },
          endpoints: {
            inbox_url: `${config.baseUrl}/api/v1/inbox/${id}/${created.inboxSecret}`,
            events_url: `${config.baseUrl}/api/v1/addresses/${id}/events`,
            mcp_url: `${config.baseUrl}/api/v1/addresses/${id}/mcp`,
            hook_url: `${config.baseUrl}/api/v1/hooks/${id}/${created.inboxSecret}`,
          },
        });
      },
    );

    app.get(
      '/api/v1/addresses/:addressId',
      {
        onRequest: auth,
        schema: {
          operationId: 'getAddress',
          summary: 'Get an address',
          description:
            'The address (id, slug, name, taskId, email, createdAt, expiresAt), with its read token. Readable until the grace period after expiresAt ends.',
          tags: ['addresses'],
          security: BEARER,
          params: AddressParams,
          response: { 200: AddressResponse, ...errorResponses(401, 404) },
        },
      },
      async (request) => ({ address: addressView(authenticatedAddress(request), config.emailDomain) }),
    );

    app.delete(
      '/api/v1/addresses/:addressId',
      {
        onRequest: auth,
        schema: {
          operationId: 'deleteAddress',
          summary: 'Delete an address and all its events',
          description: 'Waiting long-polls on the address end at once with 404 not_found.',
          tags: ['addresses'],
          security: BEARER,
          params: AddressParams,
          response: { 204: { type: 'null', description: 'Deleted; empty body.' }, ...errorResponses(401, 404, 413, 415) },
        },
      },
      async (request, reply) => {
        await service.deleteAddress(authenticatedAddress(request));
        return reply.code(204).send(null);
      },
    );
  };
