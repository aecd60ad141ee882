// GET /inspect: a static page for a person to watch an address's queue live (design.md, "Agent toolkit and live view").
// Three files from src/inspect, read once at start and served with a Content-Security-Policy that
// allows nothing but this origin's own script, style and requests: no inline script, no third party.

import { readFileSync } from 'node:fs';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppDeps } from '../route-deps.js';
import { errorResponses, NO_AUTH } from '../schemas.js';

export const INSPECT_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const ASSETS = [
  {
    url: '/inspect',
    operationId: 'getInspectPage',
    file: 'inspect.html',
    type: 'text/html; charset=utf-8',
    summary: 'Live inspector page for a person (HTML)',
  },
  {
    url: '/inspect/inspect.js',
    operationId: 'getInspectScript',
    file: 'inspect.js',
    type: 'text/javascript; charset=utf-8',
    summary: "The inspector's script",
  },
  { url: '/inspect/inspect.css', operationId: 'getInspectStyle', file: 'inspect.css', type: 'text/css; charset=utf-8', summary: "The inspector's style sheet" },
];

export const inspectRoutes =
  (_deps: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    for (const asset of ASSETS) {
      // Next to the compiled file in dist (scripts/copy-assets.mjs copies them there).
      const body = readFileSync(new URL(`../../inspect/${asset.file}`, import.meta.url), 'utf8');
      app.get(
        asset.url,
        {
          schema: {
            operationId: asset.operationId,
            summary: asset.summary,
            description:
              asset.file === 'inspect.html'
                ? 'Open /inspect#<address_id>:<read_token> (the fragment never reaches the server) or type them in. Shows the address, the live queue ' +
                  'newest first (over GET …/events/stream, the token in the Authorization header), ack buttons and curl lines. No third-party requests; ' +
                  `served with Content-Security-Policy: ${INSPECT_CSP}.`
                : 'A static asset of /inspect.',
            tags: ['inspect'],
            security: NO_AUTH,
            response: { 200: { description: asset.type, content: { [asset.type.split(';')[0] as string]: { schema: Type.String() } } }, ...errorResponses() },
          },
        },
        (_request, reply) => {
          reply
            .headers({
              'content-type': asset.type,
              'content-security-policy': INSPECT_CSP,
              'x-content-type-options': 'nosniff',
              'referrer-policy': 'no-referrer',
              'cache-control': 'no-cache',
            })
            .send(body);
        },
      );
    }
  };
