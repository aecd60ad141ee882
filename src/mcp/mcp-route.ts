// POST /api/v1/addresses/:addressId/mcp: the Model Context Protocol over Streamable HTTP,
// stateless (no session id), with a new McpServer and transport per request, so any instance can
// answer any call. Answers are plain application/json (enableJsonResponse): one JSON-RPC reply per
// POST, which every proxy and curl handle, except for a call that carries a progress token: that one
// is answered as an SSE stream of its progress notifications and then its result. The bearer check and body parsing are the API's own; whatever the SDK would
// refuse with a JSON-RPC-shaped HTTP error is refused here first, in the API's error shape.
// GET and DELETE (an SSE stream, a session end) do not exist in stateless mode: the framework's
// 405 method_not_allowed with "Allow: POST" answers them, which MCP clients expect (they are in
// /openapi.json as MCP_DOCUMENT_ONLY). A body that is JSON but not JSON-RPC (not a message, an empty
// batch, `id: null`) is answered as JSON-RPC says: 400 with an Invalid Request error (-32600, id null),
// and a tools/call whose params the SDK would refuse with a raw validation dump (-32603) gets
// Invalid params (-32602) naming the field.

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ApiError, internalErrorBody } from '../domain/errors.js';
import { METHOD_NOT_ALLOWED_REF } from '../http/openapi-document.js';
import { sendApiError, toApiError } from '../http/plugins/api-error-handler.js';
import { authenticatedAddress, requireReadToken } from '../http/plugins/authentication.js';
import type { AppDeps } from '../http/route-deps.js';
import { AddressParams, BEARER, ErrorBody, errorResponses } from '../http/schemas.js';
import type { Subscriptions } from '../push/subscriptions.js';
import { CallbackVerifier } from './callback-verification.js';
import { EventStreams } from './events-stream.js';

// The SDK (with zod, express and hono under it) adds ~30 MB to the process: it is loaded on the
// first MCP call, not at boot, so a service nobody attaches over MCP does not carry it.
let runtime:
  | Promise<{
      StreamableHTTPServerTransport: typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js').StreamableHTTPServerTransport;
      JSONRPCMessageSchema: typeof import('@modelcontextprotocol/sdk/types.js').JSONRPCMessageSchema;
      SUPPORTED_PROTOCOL_VERSIONS: readonly string[];
      CallToolRequestSchema: typeof import('@modelcontextprotocol/sdk/types.js').CallToolRequestSchema;
      buildMcpServer: typeof import('./mcp-tools.js').buildMcpServer;
      modern: typeof import('./mcp-modern.js');
      toolServer: typeof import('./in-process.js').toolServer;
    }>
  | undefined;
const loadRuntime = () =>
  (runtime ??= Promise.all([
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
    import('./mcp-tools.js'),
    import('./mcp-modern.js'),
    import('./in-process.js'),
  ]).then(([http, types, tools, modern, inProcess]) => ({
    StreamableHTTPServerTransport: http.StreamableHTTPServerTransport,
    JSONRPCMessageSchema: types.JSONRPCMessageSchema,
    SUPPORTED_PROTOCOL_VERSIONS: types.SUPPORTED_PROTOCOL_VERSIONS,
    CallToolRequestSchema: types.CallToolRequestSchema,
    buildMcpServer: tools.buildMcpServer,
    modern,
    toolServer: inProcess.toolServer,
  })));

const JsonRpcMessage = Type.Object(
  {
    jsonrpc: Type.Literal('2.0'),
    id: Type.Optional(Type.Union([Type.String(), Type.Number()], { description: 'Present on requests and responses.' })),
    method: Type.Optional(Type.String({ description: 'e.g. initialize, tools/list, tools/call, notifications/initialized.' })),
    params: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: true, description: 'A JSON-RPC 2.0 request, notification or response.' },
);

/** Messages in one batch: each may be a list_events of up to MCP_PAGE_BYTES (twice), so a batch is bounded too. */
export const MAX_MCP_BATCH = 10;

const McpBody = Type.Union(
  [
    JsonRpcMessage,
    Type.Array(JsonRpcMessage, {
      minItems: 1,
      description:
        `A JSON-RPC batch of 1 to ${MAX_MCP_BATCH} messages. More than ${MAX_MCP_BATCH}: 400 invalid_request (the API's error body). ` +
        'An empty batch: 400 with the JSON-RPC error -32600 (id null). Each message is answered in the reply array; notifications and responses get no entry.',
    }),
  ],
  {
    description:
      'One JSON-RPC 2.0 message of the MCP protocol, or a batch of them. JSON that is neither (a message without jsonrpc "2.0", ' +
      'an id that is null or not a string or number): 400 with the JSON-RPC error -32600 Invalid Request, id null.',
  },
);

/** A JSON-RPC 2.0 error response (https://www.jsonrpc.org/specification#error_object); a component of /openapi.json. */
export const JsonRpcError = Type.Object(
  {
    jsonrpc: Type.Literal('2.0'),
    id: Type.Union([Type.String(), Type.Number(), Type.Null()], { description: "The request's id; null when it could not be read." }),
    error: Type.Object(
      {
        code: Type.Integer({ description: '-32600 Invalid Request, -32602 Invalid params, -32601 Method not found, -32603 Internal error.' }),
        message: Type.String(),
        data: Type.Optional(Type.Unknown()),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, title: 'JsonRpcError' },
);

const JSON_RPC_INVALID_REQUEST = -32600;
const JSON_RPC_INVALID_PARAMS = -32602;

const jsonRpcError = (id: string | number | null, code: number, message: string) => JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } });

/** What `CallToolRequestSchema` refused first, as "params.name: Invalid input…". */
function firstIssue(error: { issues?: { path: PropertyKey[]; message: string }[] }): string {
  const issue = error.issues?.[0];
  return issue ? `${issue.path.map(String).join('.') || 'params'}: ${issue.message}` : 'invalid';
}

/** MCP's GET (a server-initiated SSE stream) and DELETE (a session end): answered 405, for the document. */
export const MCP_DOCUMENT_ONLY = {
  '/api/v1/addresses/{addressId}/mcp': Object.fromEntries(
    (['get', 'delete'] as const).map((method) => [
      method,
      {
        operationId: method === 'get' ? 'openMcpStream' : 'endMcpSession',
        summary: method === 'get' ? 'MCP server-initiated stream (not offered)' : 'End an MCP session (no sessions)',
        description:
          'Stateless Streamable HTTP has no server-initiated SSE stream and no session to end: 405 with Allow: POST, ' +
          'which MCP clients take as "not offered".',
        tags: ['mcp'],
        security: BEARER,
        parameters: [{ in: 'path', name: 'addressId', required: true, schema: { type: 'string' }, description: 'Address id (addr_…).' }],
        responses: { 405: METHOD_NOT_ALLOWED_REF },
      },
    ]),
  ),
};

const McpHeaders = Type.Object({
  accept: Type.Optional(Type.String({ description: 'Must list both application/json and text/event-stream (MCP Streamable HTTP).' })),
  'mcp-protocol-version': Type.Optional(
    Type.String({
      description:
        'The protocol version: 2026-07-28 (then equal to params._meta["io.modelcontextprotocol/protocolVersion"]), or the one a 2025-era initialize negotiated.',
    }),
  ),
  'mcp-method': Type.Optional(Type.String({ description: "Revision 2026-07-28: the body's method (required there)." })),
  'mcp-name': Type.Optional(Type.String({ description: 'Revision 2026-07-28: params.name of a tools/call (required there).' })),
});

const JsonRpcReply = Type.Unknown({
  description:
    'The JSON-RPC response(s) to the request(s), as application/json. Tool failures (bad arguments, unknown event) ' +
    'are tool results with isError: true whose text is an error body {"error":{"code","message"}}.',
});

const NO_SESSION_REPLY = Type.Null({ description: 'Accepted: the body held only notifications or responses; no content.' });

function acceptsStreamableHttp(accept: string | undefined): boolean {
  return accept?.includes('application/json') === true && accept.includes('text/event-stream');
}

export const mcpRoutes =
  (deps: AppDeps & { subscriptions: Subscriptions }): FastifyPluginAsyncTypebox =>
  async (app) => {
    const { config, service, approvals, consumers, claims } = deps;
    const streams = new EventStreams(service, deps.epochs, config.baseUrl, config.maxStreamsPerAddress);
    // Webhook mode's endpoint verification: which callback URLs proved intent, per instance (soft state).
    const verifier = new CallbackVerifier(config.push, deps.subscriptions.resolve);
    // An open events/stream is not an idle connection: end each with its final frame before closing.
    app.addHook('preClose', (done) => {
      streams.closeAll();
      done();
    });
    app.post(
      '/api/v1/addresses/:addressId/mcp',
      {
        onRequest: requireReadToken(service),
        schema: {
          operationId: 'callMcp',
          summary: 'MCP server of this address (Streamable HTTP)',
          description:
            'The Model Context Protocol over Streamable HTTP, stateless (any instance answers any call), with the same bearer read ' +
            'token, scoped to this one address; results are the same JSON as the HTTP API. Revisions 2026-07-28 (per-request _meta, ' +
            'server/discover, the Events extension: events/list, events/poll, events/stream, events/subscribe, events/unsubscribe) and 2025-11-25 (initialize), told apart per request. ' +
            'Tools: get_address, list_events, ack_event, wait_for_event, request_approval, get_approval; their arguments, progress notifications ' +
            'and errors: /llms-full.txt, sections "MCP" and "Reaching a running agent". A wait (wait_for_event, list_events or claim_events with wait, ' +
            'events/stream) whose read token is rotated meanwhile ends at once: an isError result with credentials_rotated, or on events/stream ' +
            'notifications/events/terminated (error -32001, data.code credentials_rotated) and the final result.',
          tags: ['mcp'],
          security: BEARER,
          params: AddressParams,
          headers: McpHeaders,
          body: McpBody,
          response: {
            200: JsonRpcReply,
            202: NO_SESSION_REPLY,
            ...errorResponses(401, 413, 415),
            404: {
              description:
                "`not_found` in the API's error body: no such address. A JSON-RPC error -32601 (revision 2026-07-28): a method this server does not offer.",
              anyOf: [ErrorBody, JsonRpcError],
            },
            429: { description: 'Revision 2026-07-28: events/stream beyond MAX_STREAMS_PER_ADDRESS open streams (JSON-RPC error -32025).', ...JsonRpcError },
            503: {
              description:
                "Storage cannot be reached or written right now; nothing was changed; retry after the Retry-After seconds. `unavailable` in the API's " +
                'error body when the token check met the outage, else a JSON-RPC error whose data is {code: "unavailable", retryAfterSeconds} (a tool call ' +
                'in revisions before 2026-07-28 is an isError result with the error code unavailable).',
              anyOf: [ErrorBody, JsonRpcError],
            },
            400: {
              description:
                "`invalid_request` / `invalid_json` in the API's error body: a wrong Accept or MCP-Protocol-Version header, " +
                `a batch of more than ${MAX_MCP_BATCH} messages, malformed JSON, an unknown query parameter. ` +
                'A JSON-RPC error (-32600 Invalid Request, id null): JSON that is not a JSON-RPC message, or an empty batch; revision ' +
                '2026-07-28: -32602 when params._meta lacks the protocol version or clientCapabilities, -32020 when the ' +
                'MCP-Protocol-Version, Mcp-Method or Mcp-Name header is missing or disagrees with the body, -32022 (data.supported) ' +
                'for a protocol version this server does not speak.',
              anyOf: [ErrorBody, JsonRpcError],
            },
          },
        },
        // The body's own failures are answered in JSON-RPC's terms, below.
        attachValidation: true,
      },
      async (request, reply) => {
        const address = authenticatedAddress(request);
        const invalid = request.validationError as (Error & { validationContext?: string }) | undefined;
        if (invalid && invalid.validationContext !== 'body')
          return sendApiError(reply, toApiError(invalid) ?? new ApiError('invalid_request', invalid.message));
        const { StreamableHTTPServerTransport, JSONRPCMessageSchema, SUPPORTED_PROTOCOL_VERSIONS, CallToolRequestSchema, buildMcpServer, modern, toolServer } =
          await loadRuntime();
        if (!acceptsStreamableHttp(request.headers.accept)) {
          return sendApiError(
            reply,
            new ApiError('invalid_request', "Invalid header 'Accept': MCP Streamable HTTP requires it to list both application/json and text/event-stream."),
          );
        }
        // Revision 2026-07-28 (stateless, per-request _meta) is told apart per request (mcp-modern.ts).
        if (modern.isModern(request.headers['mcp-protocol-version'], request.body)) {
          const left = new AbortController();
          reply.raw.once('close', () => left.abort());
          return modern.answerModern(request, reply, {
            service,
            address,
            baseUrl: config.baseUrl,
            epochs: deps.epochs,
            streams,
            subscriptions: deps.subscriptions,
            verifier,
            legacyVersions: SUPPORTED_PROTOCOL_VERSIONS,
            signal: left.signal,
            tools: () =>
              toolServer({
                service,
                consumers,
                claims,
                address,
                emailDomain: config.emailDomain,
                signal: left.signal,
                log: request.log,
                approvals,
                maxEventBytes: config.maxEventBytes,
                epochs: deps.epochs,
              }),
          });
        }
        const version = request.headers['mcp-protocol-version'];
        if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
          return sendApiError(
            reply,
            new ApiError(
              'invalid_request',
              `Invalid header 'MCP-Protocol-Version': ${version} is not supported (supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}).`,
            ),
          );
        }
        const messages: unknown[] = Array.isArray(request.body) ? request.body : [request.body];
        if (messages.length > MAX_MCP_BATCH) {
          return sendApiError(
            reply,
            new ApiError('invalid_request', `The JSON-RPC batch holds ${messages.length} messages; send at most ${MAX_MCP_BATCH} per request.`),
          );
        }
        if (invalid || messages.length === 0 || !messages.every((m) => JSONRPCMessageSchema.safeParse(m).success)) {
          const why =
            messages.length === 0
              ? 'the batch is empty'
              : 'the body is not a JSON-RPC 2.0 message (jsonrpc "2.0", an id that is a string or number) or a batch of them';
          return reply
            .code(400)
            .type('application/json; charset=utf-8')
            .send(jsonRpcError(null, JSON_RPC_INVALID_REQUEST, `Invalid Request: ${why}.`));
        }

        // Ends long waits when the client goes away; the response finishing fires it too, harmlessly.
        const gone = new AbortController();
        const server = buildMcpServer({
          service,
          consumers,
          claims,
          address,
          emailDomain: config.emailDomain,
          signal: gone.signal,
          log: request.log,
          approvals,
          senderPolicies: deps.senderPolicies,
          maxEventBytes: config.maxEventBytes,
          epochs: deps.epochs,
        });
        // A call that carries a progress token is answered as an SSE stream, so notifications/progress
        // can precede its result (design.md, "MCP"); every other answer stays plain JSON.
        const wantsProgress = messages.some((m) => (m as { params?: { _meta?: { progressToken?: unknown } } }).params?._meta?.progressToken !== undefined);
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !wantsProgress });
        reply.raw.once('close', () => {
          gone.abort();
          void transport.close();
          void server.close();
        });
        await server.connect(transport);
        // A tools/call the SDK's schema refuses would come back as -32603 with the raw validation dump.
        const deliver = transport.onmessage;
        transport.onmessage = (message, extra) => {
          const m = message as { id?: string | number; method?: string };
          const parsed = m.method === 'tools/call' && m.id !== undefined ? CallToolRequestSchema.safeParse(message) : undefined;
          if (parsed && !parsed.success && m.id !== undefined) {
            const body = JSON.parse(
              jsonRpcError(
                m.id,
                JSON_RPC_INVALID_PARAMS,
                `Invalid params: ${firstIssue(parsed.error)}. tools/call needs params.name (get_address, list_events, ack_event or wait_for_event) and, optionally, params.arguments as an object.`,
              ),
            );
            void transport.send(body, { relatedRequestId: m.id });
            return;
          }
          deliver?.(message, extra);
        };
        reply.hijack();
        try {
          await transport.handleRequest(request.raw, reply.raw, request.body);
        } catch (err) {
          request.log.error({ err }, 'MCP request failed');
          if (!reply.raw.headersSent) {
            reply.raw.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
            reply.raw.end(JSON.stringify(internalErrorBody()));
          } else {
            reply.raw.destroy();
          }
        }
      },
    );
  };
