import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { llmsFullTxt, llmsTxt } from '../../docs/llms.js';
import { sendJsonText } from '../json-text.js';
import type { AppDeps } from '../route-deps.js';
import { NO_AUTH, errorResponses } from '../schemas.js';

export const documentRoutes = ({ config }: AppDeps): FastifyPluginAsyncTypebox => async (app) => {
  // Rendered once: the documents depend only on configuration.
  const short = llmsTxt(config);
  const full = llmsFullTxt(config);
  let openapi: string | undefined;

  app.get('/openapi.json', {
    schema: { summary: 'This OpenAPI 3.1 description', tags: ['documents'], security: NO_AUTH, response: { 200: Type.Object({}, { additionalProperties: true }), ...errorResponses() } },
  }, async (_request, reply) => {
    openapi ??= JSON.stringify(app.swagger(), null, 2);
    return sendJsonText(reply, openapi);
  });

  app.get('/llms.txt', {
    schema: { summary: 'Short plain-text guide for agents', tags: ['documents'], security: NO_AUTH, response: { 200: Type.String(), ...errorResponses() } },
  }, async (_request, reply) => reply.type('text/plain; charset=utf-8').send(short));

  app.get('/llms-full.txt', {
    schema: { summary: 'Complete plain-text guide for agents', tags: ['documents'], security: NO_AUTH, response: { 200: Type.String(), ...errorResponses() } },
  }, async (_request, reply) => reply.type('text/plain; charset=utf-8').send(full));
};
