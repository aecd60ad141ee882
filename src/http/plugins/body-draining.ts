// Early answers to a request whose body is still arriving (design.md, "Errors": early errors carry
// Connection: close after a bounded amount of body is read and dropped).

import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * For an error answered while the request body is still arriving (413; a credential refused before
 * the body was read; 415, 404, 405): "Connection: close", then keep reading and discarding the
 * rest. Node ends a closing response with socket.destroySoon(), which closes the socket as soon as
 * the answer is written; closing with unread input makes the kernel send a TCP reset, and a client
 * still writing its body then sees EPIPE or ECONNRESET instead of the answer. Here the answer is
 * followed by a FIN (the client reads it and the end of the stream) while its body is drained, up to
 * `maxDiscardBytes`; past that, or when the body has ended, the socket is closed. REQUEST_TIMEOUT_MS
 * still bounds the time.
 */
export function closeAfterDrainingBody(request: FastifyRequest, reply: FastifyReply, maxDiscardBytes: number): void {
  const req = request.raw;
  const socket = req.socket as Socket | null;
  if (req.complete || !socket || reply.sent) return;
  reply.header('connection', 'close');
  socket.destroySoon = function destroyAfterDraining(this: Socket) {
    const close = () => {
      if (this.writableFinished) this.destroy();
      else this.once('finish', () => this.destroy());
    };
    if (this.writable) this.end();
    if (req.complete || this.destroyed) return close();
    let left = maxDiscardBytes;
    req.on('data', (chunk: Buffer) => {
      left -= chunk.length;
      if (left < 0) this.destroy();
    });
    req.once('end', close);
    req.once('error', () => this.destroy());
    req.resume();
  };
}
