// Bearer authentication for endpoints 2-5 and MCP, as an onRequest hook: it runs before the body
// and the query are looked at, so an unauthenticated caller learns nothing from validation errors.
import type { FastifyRequest, onRequestHookHandler } from 'fastify';
import type { AddressRecord } from '../../domain/model.js';
import type { ReturnAddressService } from '../../domain/return-address-service.js';

const authenticated = new WeakMap<FastifyRequest, AddressRecord>();

export function requireReadToken(service: ReturnAddressService): onRequestHookHandler {
  // A callback hook, not an async one: when the address is held in memory it answers in this turn.
  return (request, _reply, done) => {
    const { addressId } = request.params as { addressId: string };
    const { authorization } = request.headers;
    let address: AddressRecord | undefined;
    try {
      address = service.authenticateNow(addressId, authorization);
    } catch (err) {
      return done(err as Error);
    }
    if (address) {
      authenticated.set(request, address);
      return done();
    }
    service.authenticate(addressId, authorization).then((a) => {
      authenticated.set(request, a);
      done();
    }, done);
  };
}

/** The address the request's bearer token opened (only on routes behind requireReadToken). */
export function authenticatedAddress(request: FastifyRequest): AddressRecord {
  const a = authenticated.get(request);
  if (!a) throw new Error('route is not behind requireReadToken');
  return a;
}
