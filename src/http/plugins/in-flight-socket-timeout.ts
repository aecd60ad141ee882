// The idle-socket timeout (SOCKET_TIMEOUT_MS) applies to a connection between requests only. While a
// request is being handled its socket is quiet by design (a long-poll waits up to 25 s; a capture
// may wait for its group commit, or for an event loop that something held), and a socket destroyed
// then lost the answer of a request whose event was already stored. Receiving a request
// stays bounded by REQUEST_TIMEOUT_MS and HEADERS_TIMEOUT_MS, which Node checks independently of
// the socket timeout, and handling it is bounded by its own budgets.
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/** The request's socket when it is a real one (app.inject's stand-in has no timeout to suspend). */
function realSocket(socket: Socket | undefined): Socket | undefined {
  return socket !== undefined && typeof socket.setTimeout === 'function' ? socket : undefined;
}

export function suspendSocketTimeoutWhileHandling(app: FastifyInstance, socketTimeoutMs: number): void {
  app.addHook('onRequest', (request, _reply, done) => {
    realSocket(request.raw.socket)?.setTimeout(0);
    done();
  });
  app.addHook('onResponse', (request, _reply, done) => {
    const socket = realSocket(request.raw.socket);
    if (socket && !socket.destroyed) socket.setTimeout(socketTimeoutMs);
    done();
  });
}
