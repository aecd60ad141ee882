// MCP revision 2026-07-28 on the same /mcp endpoint (design.md, "MCP, current revision"): no
// initialize and no session; each POST carries one request whose params._meta names its protocol
// version and client, mirrored in the MCP-Protocol-Version and Mcp-Method (and, for tools/call,
// Mcp-Name) headers. This is a thin JSON-RPC layer: server/discover and the Events extension
// are answered here; tools/list and tools/call go to the very McpServer the 2025-11-25 path builds
// (over an in-process transport), so a tool means the same in both revisions, and only the
// result's revision fields (resultType, cache hints) are added on the way out.

import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AddressRecord } from '../domain/model.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';
import { UNTRUSTED_CONTENT } from '../domain/trust.js';
import type { EpochStore } from '../epoch/epoch-store.js';
import type { Subscriptions } from '../push/subscriptions.js';
import { isStoreUnavailable, UNAVAILABLE_RETRY_AFTER_SECONDS } from '../storage/store-unavailable.js';
import type { CallbackVerifier } from './callback-verification.js';
import { EVENTS_EXTENSION, EventsError, listEventTypes, pollEvents, unavailableEventsError } from './events-extension.js';
import type { EventStreams } from './events-stream.js';
import { subscribeEvents, unsubscribeEvents } from './events-subscribe.js';
import type { McpToolServer } from './in-process.js';
import { INSTRUCTIONS, SERVER_INFO } from './mcp-tools.js';

export const MODERN_VERSION = '2026-07-28';
export const MODERN_VERSIONS: readonly string[] = [MODERN_VERSION];
export const PROTOCOL_VERSION_META = 'io.modelcontextprotocol/protocolVersion';

const INVALID_REQUEST = -32600;
const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;
const INTERNAL_ERROR = -32603;
const HEADER_MISMATCH = -32020;
const UNSUPPORTED_PROTOCOL_VERSION = -32022;

/** How long a client may keep server/discover's and tools/list's answers: they change only with a new release. */
const CACHE_TTL_MS = 3_600_000;

type Id = string | number;
interface Message {
  jsonrpc: '2.0';
  id?: Id;
  method: string;
  params?: Record<string, unknown>;
}

const metaOf = (body: unknown): Record<string, unknown> | undefined => {
  const params = (body as { params?: unknown } | null)?.params;
  const meta = typeof params === 'object' && params !== null ? (params as { _meta?: unknown })._meta : undefined;
  return typeof meta === 'object' && meta !== null ? (meta as Record<string, unknown>) : undefined;
};

/**
 * Whether this POST speaks the stateless revision: its header names it, or its body carries a
 * per-request protocol version (then the header must agree). Anything else is served as 2025-11-25.
 */
export function isModern(headerVersion: string | undefined, body: unknown): boolean {
  if (headerVersion !== undefined && MODERN_VERSIONS.includes(headerVersion)) return true;
  return !Array.isArray(body) && metaOf(body)?.[PROTOCOL_VERSION_META] !== undefined;
}

/** A header value in the revision's Base64 sentinel form (=?base64?…?=) decoded; any other as is. */
function headerValue(v: string | string[] | undefined): string | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  const m = s === undefined ? null : /^=\?base64\?([A-Za-z0-9+/=]*)\?=$/.exec(s);
  return m ? Buffer.from(m[1]!, 'base64').toString('utf8') : s;
}

export interface ModernDeps {
  service: ReturnAddressService;
  address: AddressRecord;
  baseUrl: string;
  /** The store's epoch: Events cursors carry it, results say it in `_meta` (design.md, "Store epoch"). */
  epochs: EpochStore;
  streams: EventStreams;
  /** Webhook subscriptions (src/push/): events/subscribe and events/unsubscribe make and remove them. */
  subscriptions: Subscriptions;
  /** The webhook endpoint verification (callback-verification.ts), one per route: its cache of verified URLs. */
  verifier: CallbackVerifier;
  /** The 2025-era versions the legacy path accepts, listed in server/discover and version errors. */
  legacyVersions: readonly string[];
  /** The tool server of this request (mcp-tools.ts) and a way to hand it one message. */
  tools: () => McpToolServer;
  /** Ends long waits when the client leaves. */
  signal: AbortSignal;
}

const errorJson = (id: Id | null, code: number, message: string, data?: unknown) =>
  JSON.stringify({ jsonrpc: '2.0', id, error: data === undefined ? { code, message } : { code, message, data } });

function sendJson(reply: FastifyReply, status: number, text: string): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').send(text);
}

function readMessage(body: unknown): Message | string {
  if (Array.isArray(body)) return 'revision 2026-07-28 takes one JSON-RPC message per POST, not a batch';
  const m = body as Partial<Message> | null;
  if (typeof m !== 'object' || m === null || m.jsonrpc !== '2.0' || typeof m.method !== 'string') {
    return 'the body is not a JSON-RPC 2.0 request (jsonrpc "2.0", a method)';
  }
  if ('id' in m && typeof m.id !== 'string' && typeof m.id !== 'number') return 'the id must be a string or a number';
  if (m.params !== undefined && (typeof m.params !== 'object' || m.params === null || Array.isArray(m.params))) return 'params must be an object';
  return m as Message;
}

export const CLIENT_CAPABILITIES_META = 'io.modelcontextprotocol/clientCapabilities';

/**
 * Checks the per-request _meta and the revision's headers against the body, in the order the
 * revision's conformance suite expects: a required _meta field missing is Invalid params (the
 * request is malformed); a header that differs from the body is HeaderMismatch, before the version
 * itself is judged; then an unsupported version. The refusal as [status, JSON text], or undefined.
 */
function checkHeaders(request: FastifyRequest, m: Message, legacy: readonly string[]): [number, string] | undefined {
  const id = m.id ?? null;
  const header = headerValue(request.headers['mcp-protocol-version']);
  const meta = m.params?._meta;
  const version = typeof meta === 'object' && meta !== null ? (meta as Record<string, unknown>)[PROTOCOL_VERSION_META] : undefined;
  const capabilities = typeof meta === 'object' && meta !== null ? (meta as Record<string, unknown>)[CLIENT_CAPABILITIES_META] : undefined;
  if (typeof version !== 'string' || typeof capabilities !== 'object' || capabilities === null || Array.isArray(capabilities)) {
    return [
      400,
      errorJson(
        id,
        INVALID_PARAMS,
        `Invalid params: every request of revision ${MODERN_VERSION} carries params._meta with "${PROTOCOL_VERSION_META}" (a string, ` +
          `as the MCP-Protocol-Version header) and "${CLIENT_CAPABILITIES_META}" (an object, {} when the client declares none).`,
      ),
    ];
  }
  if (header !== version) {
    return [
      400,
      errorJson(
        id,
        HEADER_MISMATCH,
        `Header mismatch: the MCP-Protocol-Version header must be sent and equal params._meta's version (${version.slice(0, 100)}).`,
      ),
    ];
  }
  if (!MODERN_VERSIONS.includes(version)) {
    return [
      400,
      errorJson(id, UNSUPPORTED_PROTOCOL_VERSION, 'Unsupported protocol version', {
        supported: [...MODERN_VERSIONS, ...legacy],
        requested: version.slice(0, 100),
      }),
    ];
  }
  if (m.id === undefined) return undefined;
  if (headerValue(request.headers['mcp-method']) !== m.method) {
    return [
      400,
      errorJson(id, HEADER_MISMATCH, `Header mismatch: the Mcp-Method header must be sent and equal the body's method (${m.method.slice(0, 100)}).`),
    ];
  }
  if (m.method === 'tools/call' && headerValue(request.headers['mcp-name']) !== m.params?.name) {
    return [400, errorJson(id, HEADER_MISMATCH, 'Header mismatch: tools/call needs the Mcp-Name header, equal to params.name.')];
  }
  return undefined;
}

/** Answers one POST of revision 2026-07-28. */
export async function answerModern(request: FastifyRequest, reply: FastifyReply, deps: ModernDeps): Promise<unknown> {
  const m = readMessage(request.body);
  if (typeof m === 'string') return sendJson(reply, 400, errorJson(null, INVALID_REQUEST, `Invalid Request: ${m}.`));
  const refused = checkHeaders(request, m, deps.legacyVersions);
  if (refused) return sendJson(reply, refused[0], refused[1]);
  // This revision defines no client notification over HTTP; one that comes is accepted and ignored.
  if (m.id === undefined) return reply.code(202).send();
  const id = m.id;
  const params = m.params ?? {};
  try {
    switch (m.method) {
      case 'server/discover':
        return sendJson(reply, 200, JSON.stringify({ jsonrpc: '2.0', id, result: discoverResult(deps.legacyVersions) }));
      case 'events/list':
        return sendJson(reply, 200, JSON.stringify({ jsonrpc: '2.0', id, result: listEventTypes() }));
      case 'events/poll': {
        const result = await pollEvents(deps.service, deps.epochs, deps.address, deps.baseUrl, params, deps.signal);
        return sendJson(reply, 200, `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result}}`);
      }
      case 'events/subscribe': {
        const result = await subscribeEvents(deps, deps.address, params);
        return sendJson(reply, 200, JSON.stringify({ jsonrpc: '2.0', id, result }));
      }
      case 'events/unsubscribe': {
        const result = await unsubscribeEvents(deps, deps.address, params);
        return sendJson(reply, 200, JSON.stringify({ jsonrpc: '2.0', id, result }));
      }
      case 'events/stream':
        reply.hijack();
        await deps.streams.start(deps.address, id, params, reply.raw, request.log).catch((err: unknown) => {
          if (reply.raw.headersSent) throw err;
          const status = err instanceof EventsError && err.code === -32025 ? 429 : isStoreUnavailable(err) ? 503 : 200;
          const retryAfter = status === 429 ? { 'retry-after': '10' } : status === 503 ? { 'retry-after': String(UNAVAILABLE_RETRY_AFTER_SECONDS) } : {};
          reply.raw.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...retryAfter });
          reply.raw.end(eventsErrorJson(id, err, request));
        });
        return reply;
      case 'tools/list':
      case 'tools/call':
        return forwardToTools(reply, deps, m as Message & { id: Id });
      default:
        return sendJson(
          reply,
          404,
          errorJson(
            id,
            METHOD_NOT_FOUND,
            `Method not found: ${m.method.slice(0, 100)} (revision ${MODERN_VERSION} here offers server/discover, tools/list, tools/call, events/list, events/poll, events/stream, events/subscribe and events/unsubscribe).`,
          ),
        );
    }
  } catch (err) {
    // A store outage is the HTTP API's 503 with Retry-After: a client and a proxy both know to retry.
    if (isStoreUnavailable(err)) reply.header('retry-after', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
    return sendJson(reply, isStoreUnavailable(err) ? 503 : 200, eventsErrorJson(id, err, request));
  }
}

function eventsErrorJson(id: Id, err: unknown, request: FastifyRequest): string {
  if (err instanceof EventsError) return errorJson(id, err.code, err.message, err.data);
  if (isStoreUnavailable(err)) {
    request.log.warn({ err }, 'MCP request failed: the store is unavailable');
    const e = unavailableEventsError();
    return errorJson(id, e.code, e.message, e.data);
  }
  const status = (err as { status?: number }).status;
  if (typeof status === 'number' && status < 500) return errorJson(id, INVALID_PARAMS, (err as Error).message);
  request.log.error({ err }, 'MCP request failed');
  return errorJson(id, INTERNAL_ERROR, 'Internal error');
}

function discoverResult(legacy: readonly string[]): Record<string, unknown> {
  return {
    resultType: 'complete',
    supportedVersions: [...MODERN_VERSIONS, ...legacy],
    capabilities: { tools: { listChanged: false }, extensions: { [EVENTS_EXTENSION]: {} } },
    instructions:
      `${INSTRUCTIONS} Instead of polling with tools, events/poll (cursor, hasMore, nextPollMs) or events/stream (pushed, with heartbeats carrying ` +
      `the cursor) deliver the event type return_address.event (or return_address.email, .capture, .inbox, .approval, .service for one way in), ` +
      `and events/subscribe POSTs each occurrence to your https URL (Standard Webhooks signature, X-MCP-Subscription-Id; subscribe again ` +
      `before refreshBefore to refresh; the URL must first echo a signed verification challenge); ` +
      `cursor null is the start of what the queue keeps (maxAgeMs bounds it). ${UNTRUSTED_CONTENT}`,
    ttlMs: CACHE_TTL_MS,
    cacheScope: 'public',
    _meta: { 'io.modelcontextprotocol/serverInfo': SERVER_INFO },
  };
}

/**
 * tools/list and tools/call, answered by the tool server the 2025-11-25 path uses. A call with a
 * progress token is answered as an SSE stream (its notifications/progress, then its result).
 */
async function forwardToTools(reply: FastifyReply, deps: ModernDeps, m: Message & { id: Id }): Promise<unknown> {
  const server = deps.tools();
  const progress = (m.params?._meta as { progressToken?: unknown } | undefined)?.progressToken !== undefined;
  if (progress) {
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' });
  }
  const answer = await server.handle(m, (note) => {
    if (progress && !reply.raw.destroyed) reply.raw.write(`data: ${JSON.stringify(note)}\n\n`);
  });
  const out = answer as { result?: Record<string, unknown> };
  if (out.result) {
    out.result = { resultType: 'complete', ...out.result };
    if (m.method === 'tools/list') out.result = { ...out.result, ttlMs: CACHE_TTL_MS, cacheScope: 'public' };
  }
  const text = JSON.stringify(answer);
  if (!progress) return sendJson(reply, 200, text);
  reply.raw.end(`data: ${text}\n\n`);
  return reply;
}
