// POST /api/v1/addresses/:addressId/mcp: the Model Context Protocol over Streamable HTTP,
// stateless (no session id), with a new McpServer and transport per request, so any instance can
// answer any call. Answers are plain application/json (enableJsonResponse): one JSON-RPC reply per
// POST, which every proxy and curl handle; the tools send no progress worth streaming. The bearer check and body parsing are the API's own; whatever the SDK would
// refuse with a JSON-RPC-shaped HTTP error is refused here first, in the API's error shape.
// GET and DELETE (an SSE stream, a session end) do not exist in stateless mode: the framework's
// 405 method_not_allowed with "Allow: POST" answers them, which MCP clients expect.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ApiError, internalErrorBody } from '../domain/errors.js';
import { authenticatedAddress, requireReadToken } from '../http/plugins/authentication.js';
import { sendApiError } from '../http/plugins/error-handling.js';
import type { AppDeps } from '../http/route-deps.js';
import { AddressParams, BEARER, errorResponses } from '../http/schemas.js';

// The SDK (with zod, express and hono under it) adds ~30 MB to the process: it is loaded on the
// first MCP call, not at boot, so a service nobody attaches over MCP does not carry it.
let runtime: Promise<{
  StreamableHTTPServerTransport: typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js').StreamableHTTPServerTransport;
  JSONRPCMessageSchema: typeof import('@modelcontextprotocol/sdk/types.js').JSONRPCMessageSchema;
  SUPPORTED_PROTOCOL_VERSIONS: readonly string[];
  buildMcpServer: typeof import('./mcp-tools.js').buildMcpServer;
}> | undefined;
const loadRuntime = () => (runtime ??= Promise.all([
  import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
  import('@modelcontextprotocol/sdk/types.js'),
  import('./mcp-tools.js'),
]).then(([http, types, tools]) => ({
  StreamableHTTPServerTransport: http.StreamableHTTPServerTransport,
  JSONRPCMessageSchema: types.JSONRPCMessageSchema,
  SUPPORTED_PROTOCOL_VERSIONS: types.SUPPORTED_PROTOCOL_VERSIONS,
  buildMcpServer: tools.buildMcpServer,
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

const McpBody = Type.Union([JsonRpcMessage, Type.Array(JsonRpcMessage, { minItems: 1, description: `A JSON-RPC batch of at most ${MAX_MCP_BATCH} messages (more: 400).` })], {
  description: 'One JSON-RPC 2.0 message of the MCP protocol, or a batch of them.',
});

const McpHeaders = Type.Object({
  accept: Type.Optional(Type.String({ description: 'Must list both application/json and text/event-stream (MCP Streamable HTTP).' })),
  'mcp-protocol-version': Type.Optional(Type.String({ description: 'The protocol version negotiated by initialize; sent on later requests.' })),
});

const JsonRpcReply = Type.Unknown({
  description: 'The JSON-RPC response(s) to the request(s), as application/json. Tool failures (bad arguments, unknown event) ' +
    'are tool results with isError: true whose text is an error body {"error":{"code","message"}}.',
});

const NO_SESSION_REPLY = Type.Null({ description: 'Accepted: the body held only notifications or responses; no content.' });

function acceptsStreamableHttp(accept: string | undefined): boolean {
  return accept?.includes('application/json') === true && accept.includes('text/event-stream');
}

export const mcpRoutes = ({ config, service }: AppDeps): FastifyPluginAsyncTypebox => async (app) => {
  app.post('/api/v1/addresses/:addressId/mcp', {
    onRequest: requireReadToken(service),
    schema: {
      summary: 'MCP server of this address (Streamable HTTP)',
      description: 'The Model Context Protocol over Streamable HTTP, stateless (no Mcp-Session-Id; any instance answers any call), ' +
        'with the same bearer read token, scoped to this one address. Tools: get_address {} -> {address}; ' +
        'list_events {after=0, limit=50 (1-100), wait=0 (0-25 s)} -> {events, next_cursor, has_more}; ack_event {event_id} -> {event}; ' +
        'wait_for_event {after=0, timeout=25 (0-25 s), type?} -> {event | null, next_cursor}. Results are the same JSON as the HTTP API, ' +
        'as structuredContent and as JSON text. Send Accept: application/json, text/event-stream; answers are application/json. ' +
        'GET and DELETE answer 405 (no server-initiated stream, no session to end).',
      tags: ['mcp'],
      security: BEARER,
      params: AddressParams,
      headers: McpHeaders,
      body: McpBody,
      response: { 200: JsonRpcReply, 202: NO_SESSION_REPLY, ...errorResponses(400, 401, 404, 413, 415) },
    },
  }, async (request, reply) => {
    const address = authenticatedAddress(request);
    const { StreamableHTTPServerTransport, JSONRPCMessageSchema, SUPPORTED_PROTOCOL_VERSIONS, buildMcpServer } = await loadRuntime();
    if (!acceptsStreamableHttp(request.headers.accept)) {
      return sendApiError(reply, new ApiError('invalid_request',
        "Invalid header 'Accept': MCP Streamable HTTP requires it to list both application/json and text/event-stream."));
    }
    const version = request.headers['mcp-protocol-version'];
    if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      return sendApiError(reply, new ApiError('invalid_request',
        `Invalid header 'MCP-Protocol-Version': ${version} is not supported (supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}).`));
    }
    const messages: unknown[] = Array.isArray(request.body) ? request.body : [request.body];
    if (messages.length > MAX_MCP_BATCH) {
      return sendApiError(reply, new ApiError('invalid_request',
        `The JSON-RPC batch holds ${messages.length} messages; send at most ${MAX_MCP_BATCH} per request.`));
    }
    if (!messages.every((m) => JSONRPCMessageSchema.safeParse(m).success)) {
      return sendApiError(reply, new ApiError('invalid_request', 'The body is not a valid JSON-RPC 2.0 message (or batch of them).'));
    }

    // Ends long waits when the client goes away; the response finishing fires it too, harmlessly.
    const gone = new AbortController();
    const server = buildMcpServer({ service, address, emailDomain: config.emailDomain, signal: gone.signal, log: request.log });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    reply.raw.once('close', () => {
      gone.abort();
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
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
  });
};
