import type { FastifyReply } from 'fastify';

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * Sends JSON already rendered by the domain's representations (events are written straight from
 * their stored JSON), as text or as its UTF-8 bytes. A string or Buffer payload with a JSON content
 * type skips Fastify's serializer; the route's response schema still documents the shape.
 */
// biome-ignore lint/suspicious/noExplicitAny: any route's reply, whatever its generic parameters
export function sendJsonText(reply: FastifyReply<any, any, any, any, any, any, any, any>, text: string | Buffer, status = 200): FastifyReply {
  return (reply as FastifyReply).code(status).type(JSON_CONTENT_TYPE).send(text);
}
