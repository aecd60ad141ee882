// POST /api/v1/addresses/{id}/rotate (design.md, "Credential rotation"): the reader replaces a
// leaked inbox secret, read token or both. Checks in the order of every bearer route: the
// credential first (requireReadToken), then the body.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { bearerToken } from '../../domain/bearer-token.js';
import { ApiError } from '../../domain/errors.js';
import { addressView } from '../../domain/representation.js';
import type { ReturnAddressService } from '../../domain/return-address-service.js';
import { CredentialRotation, type ReadTokenRotated } from '../../rotation/credential-rotation.js';
import type { CredentialStore } from '../../rotation/rotation-store.js';
import { authenticatedAddress, requireReadToken } from '../plugins/authentication.js';
import { AddressParams, BEARER, errorResponses } from '../schemas.js';
import { RotateBody, RotateResponse } from './rotation-schemas.js';

const GUIDE = 'Guide: /llms-full.txt, "Rotating credentials".';

export const rotationRoutes =
  ({
    service,
    credentials,
    readTokenRotated,
    config,
  }: {
    service: ReturnAddressService;
    credentials: CredentialStore;
    readTokenRotated?: ReadTokenRotated | undefined;
    config: { baseUrl: string; emailDomain: string };
  }): FastifyPluginAsyncTypebox =>
  async (app) => {
    const rotation = new CredentialRotation(credentials, (id, authorization) => service.authenticate(id, authorization), readTokenRotated);

    app.post(
      '/api/v1/addresses/:addressId/rotate',
      {
        onRequest: requireReadToken(service),
        schema: {
          operationId: 'rotateCredentials',
          summary: "Replace the address's inbox secret, read token or both",
          description:
            'For a leaked inbox URL or read token. The old credential is refused from the answer on, on every instance (inbox and capture URLs 404, read token 401); ' +
            'the answer shows the new ones once, like create. The address, its email address, its queue, consumers and signing secrets are unchanged. ' +
            'Every wait opened with a rotated read token (long-poll, stream, waiting claim, their MCP forms) ends at once on every instance: ' +
            `401 credentials_rotated, or a final \`event: error\` frame with that code on a stream. Waits opened with the new token, and webhook subscriptions, go on. ${GUIDE}`,
          tags: ['addresses'],
          security: BEARER,
          params: AddressParams,
          body: RotateBody,
          response: { 200: RotateResponse, ...errorResponses(400, 401, 404, 413, 415) },
        },
      },
      async (request) => {
        const body = request.body;
        if (body.inbox_secret !== true && body.read_token !== true) {
          throw new ApiError('invalid_request', "Invalid body: set 'inbox_secret' or 'read_token' (or both) to true, naming what to replace.");
        }
        const address = authenticatedAddress(request);
        const rotated = await rotation.rotate(address, bearerToken(request.headers.authorization), {
          inboxSecret: body.inbox_secret === true,
          readToken: body.read_token === true,
        });
        const id = address.id;
        const note =
          rotated.readToken === undefined
            ? 'The old inbox URL and capture URL are refused from now on: give the new ones to your senders.'
            : 'Store read_token now: it is shown only once and cannot be recovered. The old one is refused from now on.';
        return {
          address: addressView(address, config.emailDomain),
          credentials: { ...(rotated.readToken === undefined ? {} : { read_token: rotated.readToken }), note },
          endpoints: {
            ...(rotated.inboxSecret === undefined
              ? {}
              : {
                  inbox_url: `${config.baseUrl}/api/v1/inbox/${id}/${rotated.inboxSecret}`,
                  hook_url: `${config.baseUrl}/api/v1/hooks/${id}/${rotated.inboxSecret}`,
                }),
            events_url: `${config.baseUrl}/api/v1/addresses/${id}/events`,
            mcp_url: `${config.baseUrl}/api/v1/addresses/${id}/mcp`,
          },
        };
      },
    );
  };
