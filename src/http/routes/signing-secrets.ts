import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { isStandardWebhooksSecret } from '../../capture/signature-verification.js';
import { bearerToken } from '../../domain/bearer-token.js';
import { ApiError } from '../../domain/errors.js';
import { authenticatedAddress, requireReadToken } from '../plugins/authentication.js';
import type { AppDeps } from '../route-deps.js';
import { AddressParams, BEARER, errorResponses, SigningSecretsBody, SigningSecretsResponse } from '../schemas.js';

export const signingSecretRoutes =
  ({ service, signingSecrets }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.put(
      '/api/v1/addresses/:addressId/signing-secrets',
      {
        onRequest: requireReadToken(service),
        schema: {
          operationId: 'setSigningSecrets',
          summary: 'Set the secrets that check capture URL signatures',
          description:
            "Replaces the address's signing secrets as a whole (a scheme left out is removed; {} removes all). " +
            'Each request to hook_url that carries a signature header of a scheme then gets trust.verified (and data.signature.verified) true or false; ' +
            "without a secret for its scheme it is null, and once one is set the provider's dedupe key is taken only by a delivery that verified. A bad signature is recorded, never refused. Secrets are never returned and never logged; " +
            "they are stored sealed under a key that only this address's read token and inbox secret can open, so a copy of the database alone does not reveal them.",
          tags: ['capture'],
          security: BEARER,
          params: AddressParams,
          body: SigningSecretsBody,
          response: { 200: SigningSecretsResponse, ...errorResponses(400, 401, 404, 413, 415) },
        },
      },
      async (request) => {
        const body = request.body;
        if (body.standard_webhooks !== undefined && !isStandardWebhooksSecret(body.standard_webhooks)) {
          throw new ApiError('invalid_request', "Invalid field 'standard_webhooks': must be whsec_ followed by the base64 of the key, as the sender shows it.");
        }
        const configured = await signingSecrets.replace(authenticatedAddress(request), bearerToken(request.headers.authorization), body);
        return { configured };
      },
    );
  };
