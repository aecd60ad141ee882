// The credential checks, as onRequest hooks: they run before the body is read and before the query,
// the headers or the body are validated, so a caller without the credential learns nothing from
// validation errors and cannot make the service read or parse a body (design.md, "Errors"). Bearer
// read tokens guard the /api/v1/addresses/{id}/… routes and MCP; the inbox secret in the path guards
// POST /api/v1/inbox/{id}/{secret}.
import type { FastifyRequest, onRequestHookHandler } from 'fastify';
import type { AddressRecord } from '../../domain/model.js';
import type { ReturnAddressService } from '../../domain/return-address-service.js';

const authenticated = new WeakMap<FastifyRequest, AddressRecord>();

/**
 * A hook from a check that answers at once when the address is held in memory (`now`, undefined
 * when it cannot tell) and else asynchronously (`later`). A callback hook, not an async one, so the
 * in-memory case answers in this turn.
 */
function guard(now: (request: FastifyRequest) => AddressRecord | undefined, later: (request: FastifyRequest) => Promise<AddressRecord>): onRequestHookHandler {
  return (request, _reply, done) => {
    let address: AddressRecord | undefined;
    try {
      address = now(request);
    } catch (err) {
      return done(err as Error);
    }
    if (address) {
      authenticated.set(request, address);
      return done();
    }
    later(request).then((a) => {
      authenticated.set(request, a);
      done();
    }, done);
  };
}

const params = (request: FastifyRequest) => request.params as { addressId: string; secret?: string };

export function requireReadToken(service: ReturnAddressService): onRequestHookHandler {
  return guard(
    (r) => service.authenticateNow(params(r).addressId, r.headers.authorization),
    (r) => service.authenticate(params(r).addressId, r.headers.authorization),
  );
}

/** POST /api/v1/inbox/{id}/{secret}: unknown address and wrong secret are one 404, answered before the body is read. */
export function requireInboxSecret(service: ReturnAddressService): onRequestHookHandler {
  return guard(
    (r) => service.openInboxNow(params(r).addressId, params(r).secret ?? ''),
    (r) => service.openInbox(params(r).addressId, params(r).secret ?? ''),
  );
}

/** The address the request's credential opened (only on routes behind one of the guards above). */
export function authenticatedAddress(request: FastifyRequest): AddressRecord {
  const a = authenticated.get(request);
  if (!a) throw new Error('route is not behind requireReadToken or requireInboxSecret');
  return a;
}
