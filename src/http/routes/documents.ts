import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { llmsFullTxt, llmsTxt } from '../../docs/llms.js';
import { sendJsonText } from '../json-text.js';
import type { AppDeps } from '../route-deps.js';
import { errorResponses, NO_AUTH, textResponse } from '../schemas.js';

export const documentRoutes =
  ({ config }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    // Rendered once: the documents depend only on configuration.
    const short = llmsTxt(config);
    const full = llmsFullTxt(config);
    let openapi: string | undefined;

    app.get(
      '/openapi.json',
      {
        schema: {
          operationId: 'getOpenApi',
          summary: 'This OpenAPI 3.1 description',
          description: 'Generated from the schemas the routes validate with, for this deployment (its base URL and limits).',
          tags: ['documents'],
          security: NO_AUTH,
          response: { 200: Type.Object({}, { additionalProperties: true, description: 'An OpenAPI 3.1 document.' }), ...errorResponses() },
        },
      },
      async (_request, reply) => {
        openapi ??= JSON.stringify(app.swagger(), null, 2);
        return sendJsonText(reply, openapi);
      },
    );

    app.get(
      '/llms.txt',
      {
        schema: {
          operationId: 'getLlmsTxt',
          summary: 'Short plain-text guide for agents',
          description: "The typical flow with curl lines carrying this deployment's base URL.",
          tags: ['documents'],
          security: NO_AUTH,
          response: { 200: textResponse('The guide, as text/plain.'), ...errorResponses() },
        },
      },
      async (_request, reply) => reply.type('text/plain; charset=utf-8').send(short),
    );

    app.get(
      '/llms-full.txt',
      {
        schema: {
          operationId: 'getLlmsFullTxt',
          summary: 'Complete plain-text guide for agents',
          description: "Every endpoint, field, limit and error code, with this deployment's values.",
          tags: ['documents'],
          security: NO_AUTH,
          response: { 200: textResponse('The guide, as text/plain.'), ...errorResponses() },
        },
      },
      async (_request, reply) => reply.type('text/plain; charset=utf-8').send(full),
    );
  };
