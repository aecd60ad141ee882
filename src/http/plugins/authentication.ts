// Bearer authentication for endpoints 2-5 and MCP, as an onRequest hook: it runs before the body
// and the query are looked at, so an unauthenticated caller learns nothing from validation errors.
import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { AddressRecord } from '../../domain/model.js';
import type { ReturnAddressService } from '../../domain/return-address-service.js';

const authenticated = new WeakMap<FastifyRequest, AddressRecord>();

export function requireReadToken(service: ReturnAddressService): onRequestAsyncHookHandler {
  return async (request) => {
    const { addressId } = request.params as { addressId: string };
    authenticated.set(request, await service.authenticate(addressId, request.headers.authorization));
  };
}

/** The address the request's bearer token opened (only on routes behind requireReadToken). */
export function authenticatedAddress(request: FastifyRequest): AddressRecord {
  const a = authenticated.get(request);
  if (!a) throw new Error('route is not behind requireReadToken');
  return a;
}
