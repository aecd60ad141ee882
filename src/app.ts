// Builds the Fastify instance from its dependencies; never listens (tests and server.ts do).
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import { ERROR_CATALOGUE } from './domain/errors.js';
import { epochHeadersHook } from './epoch/epoch-headers.js';
import { DOCUMENT_TAGS } from './http/document-tags.js';
import { finishDocument } from './http/openapi-document.js';
import { clientErrorHandler } from './http/plugins/client-error-handler.js';
import { refuseUnsafeDeletePaths } from './http/plugins/delete-path.js';
import { registerErrorHandling } from './http/plugins/error-handling.js';
import { suspendSocketTimeoutWhileHandling } from './http/plugins/in-flight-socket-timeout.js';
import { registerJsonBody } from './http/plugins/json-body.js';
import { lazyRequestLogger } from './http/plugins/lazy-request-logger.js';
import { frameworkErrors } from './http/plugins/method-not-allowed.js';
import { loggerOptions } from './http/plugins/request-logging.js';
import { escapeUndecodableSegments, parseQuery } from './http/plugins/request-url.js';
import { requireHostHeader } from './http/plugins/require-host-header.js';
import { closeQueryStrings } from './http/plugins/strict-query.js';
import type { AppDeps } from './http/route-deps.js';
import { addressRoutes } from './http/routes/addresses.js';
import { approvalRoutes } from './http/routes/approvals.js';
import { CLAIM_COMPONENT_SCHEMAS } from './http/routes/claim-schemas.js';
import { claimRoutes } from './http/routes/claims.js';
import { consumerRoutes } from './http/routes/consumers.js';
import { documentRoutes } from './http/routes/documents.js';
import { eventBlobRoutes } from './http/routes/event-blobs.js';
import { eventStreamRoutes } from './http/routes/event-stream.js';
import { eventRoutes } from './http/routes/events.js';
import { healthRoutes, isHealthProbe } from './http/routes/health.js';
import { hookRoutes } from './http/routes/hooks.js';
import { inboxRoutes } from './http/routes/inbox.js';
import { inspectRoutes } from './http/routes/inspect.js';
import { pushRoutes } from './http/routes/push.js';
import { PUSH_COMPONENT_SCHEMAS } from './http/routes/push-schemas.js';
import { rotationRoutes } from './http/routes/rotation.js';
import { senderPolicyRoutes } from './http/routes/sender-policy.js';
import { SENDER_POLICY_COMPONENT_SCHEMAS } from './http/routes/sender-policy-schemas.js';
import { signingSecretRoutes } from './http/routes/signing-secrets.js';
import { COMPONENT_SCHEMAS } from './http/schemas.js';
import { JsonRpcError, MCP_DOCUMENT_ONLY, mcpRoutes } from './mcp/mcp-route.js';
import type { Subscriptions } from './push/subscriptions.js';
import { WriteHealth } from './storage/store-unavailable.js';

const trustHops = (hops: number) => (_address: string, hop: number) => hop < hops;

export interface BuildAppOptions {
  /** A logger to use instead of building one from config.logLevel (tests capture logs with it). */
  loggerInstance?: FastifyBaseLogger;
}

/** What the app is built from: the HTTP layer's deps and the rooms above it (the credential columns POST …/rotate replaces). */

/** What the app is built from: the HTTP layer's deps, and the rooms that register their own routes (push/). */
export type ComposedDeps = AppDeps & { subscriptions: Subscriptions };

export async function buildApp(deps: ComposedDeps, opts: BuildAppOptions = {}): Promise<FastifyInstance> {
  const { config } = deps;
  const app = Fastify({
    ...(opts.loggerInstance ? { loggerInstance: opts.loggerInstance } : { logger: loggerOptions(config.logLevel) }),
    bodyLimit: config.maxPayloadBytes,
    logController: new LogController({ disableRequestLogging: isHealthProbe }), // probes log one debug line instead (health.ts)
    childLoggerFactory: lazyRequestLogger,
    // A hop count as proxy-addr reads one (hop 0 is the socket's peer); Fastify's types take no number.
    trustProxy: typeof config.trustProxy === 'number' ? trustHops(config.trustProxy) : config.trustProxy,
    // Slow clients: the whole request (headers and body) must arrive within requestTimeout, the
    // headers within headersTimeout; Node checks both every second instead of its default 30 s.
    // These bound receiving the request only, so a long-poll's wait for its answer is unaffected;
    // an idle socket is dropped only after the longest long-poll plus a margin.
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    // Between requests only: in-flight-socket-timeout.ts.
    connectionTimeout: config.socketTimeoutMs,
    // requireHostHeader: Node would answer an HTTP/1.1 request without Host with a bare 400 and no
    // body; requireHostHeader answers it in the documented error shape instead.
    http: { headersTimeout: config.headersTimeoutMs, connectionsCheckingInterval: 1000, requireHostHeader: false },
    // While draining on shutdown, requests already on open connections are still served normally.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    // No route has a regex parameter, so a long one costs nothing; the limit only decides whether
    // an over-long id reaches its route (credential check, then 404) or the router's own error.
    // Node's 16 KiB header limit bounds the URL anyway.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 16 * 1024, querystringParser: parseQuery },
    rewriteUrl: (req) => escapeUndecodableSegments(req.url ?? '/'),
    // verbose: validation errors carry the failing schema, so messages can say the allowed range
    // or the allowed query parameters.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false, verbose: true } },
    clientErrorHandler,
    frameworkErrors,
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.decorate('writeHealth', new WriteHealth());
  registerErrorHandling(app, { maxPayloadBytes: config.maxPayloadBytes, maxDiscardBytes: config.maxDiscardBytes });
  registerJsonBody(app);
  closeQueryStrings(app);
  suspendSocketTimeoutWhileHandling(app, config.socketTimeoutMs);
  app.addHook('onRequest', requireHostHeader);
  app.addHook('onRequest', refuseUnsafeDeletePaths);
  // Every events page and claim answer says the store's epoch and the address's last sequence.
  app.addHook('onSend', epochHeadersHook(deps.epochs, app.log));
  deps.metrics?.registerHttpHooks(app);

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Return Address',
        version: '0.1.0',
        description:
          'A persistent return address for short-lived AI agents: an inbound email address, a secret write-only inbox URL ' +
          'and one durable, ordered event queue per address, read with a cursor and long-polling. Guides: /llms.txt and /llms-full.txt.\n\n' +
          'Order of checks: the credential first (bearer read token on the address endpoints and MCP: missing or malformed 401, ' +
          "unknown address 404, another address's token 401; the inbox secret on the inbox: unknown address or wrong secret 404), " +
          'before the body is read and before anything else is validated. Unknown query parameters are 400 invalid_request on every endpoint. ' +
          `An error answered while a body is still arriving (413 and others) carries Connection: close; up to ${config.maxDiscardBytes} more bytes ` +
          '(MAX_DISCARD_BYTES) are read and discarded so the client can read it.\n\n' +
          'Every non-2xx response has the body {"error":{"code","message"}}. Codes: ' +
          Object.entries(ERROR_CATALOGUE)
            .map(([code, e]) => `${code} (${e.status})`)
            .join(', ') +
          '. ' +
          'A documented path asked with a method it does not have answers 405 method_not_allowed with an Allow header ' +
          '(components.responses.MethodNotAllowed); HEAD is answered wherever GET is. 401s carry WWW-Authenticate: Bearer realm="return-address" ' +
          '(with error="invalid_token" when a credential was sent). Before any route: an HTTP request that cannot be parsed is 400, ' +
          'headers over 16 KiB 431, a request not received within REQUEST_TIMEOUT_MS 408, all in the same error body.',
        license: { name: 'MIT', identifier: 'MIT' },
        contact: { name: "This deployment's guides", url: `${config.baseUrl}/llms-full.txt` },
      },
      servers: [{ url: config.baseUrl }],
      tags: DOCUMENT_TAGS,
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'The read token (aa_read_…) from credentials.read_token.' },
          ...(config.createTokens.length > 0
            ? {
                createToken: {
                  type: 'http',
                  scheme: 'bearer',
                  description: "A create token of this instance (its operator's CREATE_TOKENS): required to create an address.",
                },
              }
            : {}),
        },
      },
    },
    transformObject: finishDocument({
      components: [...COMPONENT_SCHEMAS, ...CLAIM_COMPONENT_SCHEMAS, ...SENDER_POLICY_COMPONENT_SCHEMAS, ...PUSH_COMPONENT_SCHEMAS, JsonRpcError],
      extraOperations: MCP_DOCUMENT_ONLY,
    }),
  });

  await app.register(healthRoutes(deps));
  await app.register(documentRoutes(deps));
  await app.register(addressRoutes(deps));
  await app.register(eventRoutes(deps));
  await app.register(eventStreamRoutes(deps));
  await app.register(claimRoutes(deps));
  await app.register(eventBlobRoutes(deps));
  await app.register(inboxRoutes(deps));
  await app.register(hookRoutes(deps));
  await app.register(signingSecretRoutes(deps));
  await app.register(mcpRoutes(deps));
  await app.register(inspectRoutes(deps));
  await app.register(consumerRoutes(deps));
  await app.register(approvalRoutes(deps));
  await app.register(senderPolicyRoutes(deps));
  await app.register(pushRoutes(deps));
  await app.register(rotationRoutes(deps));
  return app;
}
