// Claims (design.md, "Claims"; src/claims): several workers sharing one address, each event leased to
// one of them at a time.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { claimResponseJson } from '../../claims/claim-representation.js';
import type { ClaimInput } from '../../claims/claim-service.js';
import { eventJson } from '../../domain/representation.js';
import { EPOCH_RESPONSE_HEADERS } from '../../epoch/epoch-headers.js';
import { sendJsonText } from '../json-text.js';
import { OPTIONAL_BODY } from '../openapi-document.js';
import { authenticatedAddress, requireReadToken } from '../plugins/authentication.js';
import type { AppDeps } from '../route-deps.js';
import { AddressParams, BEARER, EventResponse, errorResponses, waitErrorResponses } from '../schemas.js';
import { ClaimBody, ClaimResponse, ExtendBody, ExtendResponse, LeaseParams, NackBody } from './claim-schemas.js';

const iso = (ms: number) => new Date(ms).toISOString();

const emptyBodyIsObject = async (request: { body: unknown }) => {
  if (request.body === undefined) request.body = {};
};

export const claimRoutes =
  ({ service, claims }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    const auth = requireReadToken(service);

    app.post(
      '/api/v1/addresses/:addressId/claims',
      {
        onRequest: auth,
        preValidation: emptyBodyIsObject,
        schema: {
          operationId: 'claimEvents',
          summary: 'Lease events to one of several workers',
          description:
            'Leases up to max of the oldest claimable events (not acknowledged, not dead, no live lease, not delayed) to this caller for ' +
            'lease_seconds. Parallel claimers, also on other instances, never hold live leases on the same event. Settle each claim with its lease_id: ' +
            'ack when handled, extend to keep working, nack to give it back (with a delay, or as dead). A lease that runs out makes the event ' +
            'claimable again; after max_deliveries claims it becomes dead instead (the next claim on the address marks it). With wait > 0 and nothing ' +
            'claimable, the request is held until something is, or wait seconds pass ({"claims": []}); a rotation of the read token it was sent with ends it at once with 401 credentials_rotated. Cursor reads (GET …/events) are unaffected.',
          tags: ['claims'],
          security: BEARER,
          params: AddressParams,
          [OPTIONAL_BODY]: true,
          body: ClaimBody,
          response: { 200: { ...ClaimResponse, headers: EPOCH_RESPONSE_HEADERS }, ...waitErrorResponses(401, 404, 413, 415) },
        },
      },
      (request, reply) => {
        // As GET …/events: not async; a held claim is a ClaimWait on the follower and nothing suspended.
        const input = request.body as ClaimInput;
        const holds = input.wait > 0;
        const wait = claims.claim(authenticatedAddress(request), input, (err, batch) => {
          if (holds) reply.raw.removeListener('close', onClose);
          let body: string | undefined;
          try {
            body = batch && claimResponseJson(batch);
          } catch (renderError) {
            err = renderError;
          }
          if (body !== undefined) sendJsonText(reply, body);
          else (reply as FastifyReply).send(err);
        });
        const onClose = () => wait.cancel();
        if (holds) reply.raw.once('close', onClose);
      },
    );

    app.post(
      '/api/v1/addresses/:addressId/claims/:leaseId/ack',
      {
        onRequest: auth,
        schema: {
          operationId: 'ackClaim',
          summary: 'Acknowledge a claimed event',
          description:
            'Marks the event handled (acknowledged_at, as POST …/events/{eventId}/ack does) through its lease. Idempotent for the same lease. ' +
            'A lease that ran out may still ack while no other claim has taken the event; once one has, 409 lease_lost. Send no body.',
          tags: ['claims'],
          security: BEARER,
          params: LeaseParams,
          response: { 200: EventResponse, ...errorResponses(401, 404, 409, 413, 415) },
        },
      },
      async (request, reply) => {
        const event = await claims.ack(authenticatedAddress(request), request.params.leaseId);
        return sendJsonText(reply, `{"event":${eventJson(event)}}`);
      },
    );

    app.post(
      '/api/v1/addresses/:addressId/claims/:leaseId/extend',
      {
        onRequest: auth,
        preValidation: emptyBodyIsObject,
        schema: {
          operationId: 'extendClaim',
          summary: 'Extend a lease',
          description:
            'The lease now ends lease_seconds from now (a heartbeat for long work). 409 lease_lost once the event was claimed again, acknowledged, nacked or dead.',
          tags: ['claims'],
          security: BEARER,
          params: LeaseParams,
          [OPTIONAL_BODY]: true,
          body: ExtendBody,
          response: { 200: ExtendResponse, ...errorResponses(401, 404, 409, 413, 415) },
        },
      },
      async (request) => {
        const ends = await claims.extend(authenticatedAddress(request), request.params.leaseId, request.body.lease_seconds as number);
        return { lease_expires_at: iso(ends) };
      },
    );

    app.post(
      '/api/v1/addresses/:addressId/claims/:leaseId/nack',
      {
        onRequest: auth,
        preValidation: emptyBodyIsObject,
        schema: {
          operationId: 'nackClaim',
          summary: 'Give a claimed event back',
          description:
            'Ends the lease: the event is claimable again after delay_seconds, unless this was its max_deliveries-th claim or dead is true, ' +
            'in which case it becomes dead (dead_at, dead_reason) and is never claimed again. Answers the event as it now is. 409 lease_lost once superseded.',
          tags: ['claims'],
          security: BEARER,
          params: LeaseParams,
          [OPTIONAL_BODY]: true,
          body: NackBody,
          response: { 200: EventResponse, ...errorResponses(401, 404, 409, 413, 415) },
        },
      },
      async (request, reply) => {
        const event = await claims.nack(authenticatedAddress(request), request.params.leaseId, request.body);
        return sendJsonText(reply, `{"event":${eventJson(event)}}`);
      },
    );
  };
