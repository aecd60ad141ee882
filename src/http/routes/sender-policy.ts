// PUT, GET and DELETE …/sender-policy (design.md, "Sender policy and quarantine"): the address's own
// rule for which senders count. Bearer routes, in the order of checks of every one: the credential
// first (requireReadToken), then the body.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ReturnAddressService } from '../../domain/return-address-service.js';
import type { SenderPolicies } from '../../sender-policy/sender-policies.js';
import { senderPolicyView } from '../../sender-policy/sender-policy-representation.js';
import { authenticatedAddress, requireReadToken } from '../plugins/authentication.js';
import { AddressParams, BEARER, errorResponses } from '../schemas.js';
import { SenderPolicyBody, SenderPolicyResponse } from './sender-policy-schemas.js';

const PATH = '/api/v1/addresses/:addressId/sender-policy';
const GUIDE = 'Guide: /llms-full.txt, "Sender policy and quarantine".';

export const senderPolicyRoutes =
  ({ service, senderPolicies }: { service: ReturnAddressService; senderPolicies: SenderPolicies }): FastifyPluginAsyncTypebox =>
  async (app) => {
    const auth = requireReadToken(service);

    app.get(
      PATH,
      {
        onRequest: auth,
        schema: {
          operationId: 'getSenderPolicy',
          summary: "Show the address's sender policy",
          description: `The policy in force, or sender_policy: null when none is set. ${GUIDE}`,
          tags: ['trust'],
          security: BEARER,
          params: AddressParams,
          response: { 200: SenderPolicyResponse, ...errorResponses(401, 404) },
        },
      },
      async (request) => senderPolicyView(await senderPolicies.get(authenticatedAddress(request))),
    );

    app.put(
      PATH,
      {
        onRequest: auth,
        schema: {
          operationId: 'setSenderPolicy',
          summary: "Set the address's sender policy",
          description:
            'Replaces the policy as a whole. A mail or a captured request that fails it is still stored and answered as usual (never dropped or bounced), ' +
            'quarantined: trust.verified false, trust.reason naming the rule, skipped by default reads, streams, waits, claims and consumers ' +
            `until released (POST …/events/{eventId}/release) or acknowledged; state=quarantined lists them. Applies to deliveries from now on. ${GUIDE}`,
          tags: ['trust'],
          security: BEARER,
          params: AddressParams,
          body: SenderPolicyBody,
          response: { 200: SenderPolicyResponse, ...errorResponses(400, 401, 404, 413, 415) },
        },
      },
      async (request) => senderPolicyView(await senderPolicies.set(authenticatedAddress(request), request.body)),
    );

    app.delete(
      PATH,
      {
        onRequest: auth,
        schema: {
          operationId: 'deleteSenderPolicy',
          summary: "Remove the address's sender policy",
          description: `From now on no delivery is judged. Events already quarantined stay so until released or acknowledged. Idempotent. ${GUIDE}`,
          tags: ['trust'],
          security: BEARER,
          params: AddressParams,
          response: { 204: { type: 'null', description: 'Removed (or there was none); empty body.' }, ...errorResponses(401, 404) },
        },
      },
      async (request, reply) => {
        await senderPolicies.remove(authenticatedAddress(request));
        return reply.code(204).send(null);
      },
    );
  };
