// The MCP tools of one address (design.md, "MCP"): a thin adapter over ReturnAddressService, built
// fresh for every HTTP request (stateless Streamable HTTP), so nothing is shared between requests
// and any instance behind a load balancer can answer any call.
//
// Results carry the HTTP API's JSON shapes twice: as structuredContent and as JSON text. Failures
// a caller can act on are tool results with isError: true, never protocol errors: the queue's own
// (unknown event, address deleted) carry the API's error body as text; arguments outside the input
// schema are refused by the SDK before a tool runs, with a message naming the argument.

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
// zod only because the MCP SDK's registerTool takes zod input schemas (it derives the tools' JSON
// Schema and validates arguments from them); every range in them is read from the HTTP API's
// TypeBox schemas, so the two ways in cannot disagree.
import { z } from 'zod';
import { MAX_MCP_WAIT_SECONDS } from '../config.js';
import { consumerName } from '../consumers/consumers.js';
import { ApiError, errorBody, internalErrorBody } from '../domain/errors.js';
import { MAX_FILTER_COST, MAX_MATCH_ARRAY_MEMBERS, MAX_MATCH_CONDITIONS, MAX_TYPE_PATTERNS, parseEventFilter, STATE_HELP } from '../domain/event-filter.js';
import { addressView, eventJson, eventPageJson } from '../domain/representation.js';
import { UNTRUSTED_CONTENT } from '../domain/trust.js';
import { EventsQuery } from '../http/schemas.js';
import { isStoreUnavailable, unavailableError } from '../storage/store-unavailable.js';
import { registerApprovalTools } from './approval-tools.js';
import { registerClaimTools } from './claim-tools.js';
import { AddressOutput, EVENT_TOOLS, EventOutput, epochMeta, jsonResult } from './event-results.js';
import { ResultBudget, storedBytes } from './result-budget.js';
import { registerSenderPolicyTools } from './sender-policy-tools.js';
import type { RunTool, ToolContext } from './tool-context.js';

interface Range {
  minimum: number;
  maximum: number;
  default: number;
}

function rangeOf(schema: object): Range {
  const { minimum, maximum, default: def } = schema as Partial<Range>;
  if (minimum === undefined || def === undefined) throw new Error('EventsQuery parameters need a minimum and a default');
  return { minimum, maximum: maximum ?? Number.MAX_SAFE_INTEGER, default: def };
}

/**
 * A list_events result carries its page twice (structuredContent and text), and a batch may call it
 * many times: its pages stop at 1 MiB of stored JSON (MAX_EVENT_BYTES when that is larger; has_more
 * says so), and all the calls of one request share two pages' worth (result-budget.ts).
 */
export const MCP_PAGE_BYTES = 1024 * 1024;

/** The ranges of GET …/events, read from the HTTP schema so the tools cannot drift from it. */
const AFTER = rangeOf(EventsQuery.properties.after);
const LIMIT = rangeOf(EventsQuery.properties.limit);
const WAIT = rangeOf(EventsQuery.properties.wait);
/** wait_for_event may wait longer than an HTTP long-poll: agent clients cut a tool call at about 60 s (design.md, "MCP"). */
export const MAX_WAIT_FOR_EVENT_SECONDS = MAX_MCP_WAIT_SECONDS;
const DEFAULT_WAIT_FOR_EVENT_SECONDS = WAIT.maximum;
/** How often a waiting call with a progress token is told it is still waiting. */
export const PROGRESS_INTERVAL_MS = 5_000;

export const SERVER_INFO = { name: 'return-address', version: '0.1.0' } as const;

export const INSTRUCTIONS =
  'This server is one return address: an ordered, durable queue of events (HTTP callbacks to its inbox URL ' +
  'and inbound email). Read with list_events or wait_for_event, process events in sequence order, keep next_cursor and pass it ' +
  'as `after` next time, and ack_event what you have handled. get_address shows the address and its email. ' +
  `Each event's trust says how it came in and whether the service proved its sender. ${UNTRUSTED_CONTENT}`;

// ---- input schemas (strict: an unknown or misspelt argument is an error, not silently ignored) ----

const GetAddressInput = z.strictObject({});

// Filters and consumer, as GET …/events takes them (design.md, "Reading without loss"); checked by the domain
// (event-filter.ts, consumers.ts), so a bad one is an isError result naming the argument and the fix.
const TypeArg = z
  .union([z.string(), z.array(z.string())])
  .optional()
  .describe(
    `Only events of this type: exact ("stripe.invoice.paid") or a prefix ending in .* ("stripe.*"); a list for any of several (at most ${MAX_TYPE_PATTERNS}).`,
  );
const MatchArg = z
  .union([z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])), z.array(z.string())])
  .optional()
  .describe(
    `Only events where every dotted path equals its value: {"trust.ingress": "capture", "trust.verified": true} ` +
      `or ["trust.verified=true", "data.from.address=noreply@github.com"] (at most ${MAX_MATCH_CONDITIONS}). Strings compare exactly; numbers, booleans and null as their JSON text, ` +
      `so true and "true" both match JSON true; a path into an array matches one of its first ${MAX_MATCH_ARRAY_MEMBERS} members; a missing path never matches; ` +
      `a filter costs at most ${MAX_FILTER_COST} JSON look-ups per event (each data or metadata condition: its path segments, doubled per digit segment).`,
  );
const StateArg = z.string().optional().describe(`Which events: ${STATE_HELP}.`);
const ConsumerArg = z
  .string()
  .optional()
  .describe(
    'A named consumer ([a-z0-9_.:-]{1,64}, not only dots) whose position the server keeps: without `after` the read starts after its stored position ' +
      '(0 for a new name); with `after`, that is stored first. Passing after = the previous next_cursor confirms what you handled.',
  );

const ListEventsInput = z.strictObject({
  after: z
    .number()
    .int()
    .min(AFTER.minimum)
    .max(AFTER.maximum)
    .optional()
    .describe(
      `Cursor: return events whose sequence is greater than this. Use the previous next_cursor. Default ${AFTER.default} (from the start), or the consumer's stored position.`,
    ),
  limit: z
    .number()
    .int()
    .min(LIMIT.minimum)
    .max(LIMIT.maximum)
    .default(LIMIT.default)
    .describe(`Page size, ${LIMIT.minimum} to ${LIMIT.maximum}. Default ${LIMIT.default}.`),
  wait: z
    .number()
    .int()
    .min(WAIT.minimum)
    .max(WAIT.maximum)
    .default(WAIT.default)
    .describe(
      `Long-poll: seconds (${WAIT.minimum} to ${WAIT.maximum}) to hold the call while nothing (matching) is after the cursor; returns as soon as an event arrives. Default ${WAIT.default}.`,
    ),
  type: TypeArg,
  match: MatchArg,
  state: StateArg,
  consumer: ConsumerArg,
});

const AckEventInput = z.strictObject({
  event_id: z.string().min(1).describe('The id of the event to acknowledge (evt_…), from list_events or wait_for_event.'),
});

const WaitForEventInput = z.strictObject({
  after: z
    .number()
    .int()
    .min(AFTER.minimum)
    .max(AFTER.maximum)
    .optional()
    .describe(
      `Cursor: wait for the first event whose sequence is greater than this. Use the previous next_cursor. Default ${AFTER.default}, or the consumer's stored position.`,
    ),
  timeout: z
    .number()
    .min(0)
    .max(MAX_WAIT_FOR_EVENT_SECONDS)
    .default(DEFAULT_WAIT_FOR_EVENT_SECONDS)
    .describe(
      `Seconds to wait, 0 to ${MAX_WAIT_FOR_EVENT_SECONDS} (fractions allowed). Default ${DEFAULT_WAIT_FOR_EVENT_SECONDS}. 0 only looks, without waiting. ` +
        `A call that carries a progress token gets notifications/progress at least every ${PROGRESS_INTERVAL_MS / 1000} s while it waits.`,
    ),
  type: TypeArg,
  match: MatchArg,
  state: StateArg,
  consumer: ConsumerArg,
});

// ---- output schemas: the API's shapes, derived from its TypeBox schemas (event-results.ts) ----

const Address = AddressOutput;
const Event = EventOutput;

const AddressResponse = z.object({ address: Address });
const EventPage = z.object({
  events: z.array(Event),
  next_cursor: z
    .number()
    .int()
    .min(0)
    .describe('Pass as `after` next time: the last sequence returned or, with a filter, the last examined; `after` when none was.'),
  has_more: z.boolean().describe('Whether events after next_cursor exist already.'),
});
const EventResponse = z.object({ event: Event });
const WaitResult = z.object({
  event: Event.nullable().describe('The first matching event after `after`, or null when the timeout passed.'),
  next_cursor: z
    .number()
    .int()
    .min(0)
    .describe(
      "The last event examined (the event's sequence, or past non-matching events after it), or how far the queue was scanned when event is null. Pass as `after` next time.",
    ),
});

/**
 * Without one, every McpServer builds its own Ajv instance (for elicitation, which these tools
 * never use); a server is built per request, so that was a new Ajv on every MCP call.
 */
const JSON_SCHEMA_VALIDATOR = new AjvJsonSchemaValidator();

/** Builds the MCP server for one request on one (already authenticated) address. */
export function buildMcpServer(ctx: ToolContext): McpServer {
  const { service, address, consumers } = ctx;
  const pageBytes = Math.max(MCP_PAGE_BYTES, ctx.maxEventBytes);
  // Shared by every call of this request (a batch): two pages' worth of events in all.
  const budget = new ResultBudget(2 * pageBytes, ctx.maxEventBytes);
  /** Where a read starts: the consumer's position (after stored first when given), or after. */
  const startOf = (consumer: string | undefined, after: number | undefined): Promise<number> =>
    consumer === undefined ? Promise.resolve(after ?? AFTER.default) : consumers.start(address, consumerName(consumer, "argument 'consumer'"), after);
  const server = new McpServer(SERVER_INFO, { capabilities: { tools: {} }, instructions: INSTRUCTIONS, jsonSchemaValidator: JSON_SCHEMA_VALIDATOR });

  /**
   * Runs a tool body that renders the API's JSON text. Domain failures become isError results with
   * the API's error body; anything else is logged and hidden, as the HTTP API hides 5xx details.
   */
  const run: RunTool = async (tool, extra: { signal: AbortSignal }, fn: (signal: AbortSignal) => Promise<string>): Promise<CallToolResult> => {
    try {
      const result = jsonResult(await fn(AbortSignal.any([ctx.signal, extra.signal])), EVENT_TOOLS.has(tool));
      // Read after the body, as the headers are: the last sequence is never below the result's events.
      // A store that fails to answer here leaves them out (as the headers hook does) rather than failing a read already done.
      if (ctx.epochs && EVENT_TOOLS.has(tool)) {
        result._meta = await epochMeta(ctx.epochs, address.id).catch((err: unknown) => {
          ctx.log.warn({ err, tool }, 'epoch _meta left out: the store did not answer');
          return {};
        });
      }
      return result;
    } catch (err) {
      // A store outage is the HTTP API's 503 `unavailable` (retry after a few seconds), not an internal error.
      const e = err instanceof ApiError ? err : isStoreUnavailable(err) ? unavailableError(err) : null;
      if (!e || e.status >= 500) ctx.log[e?.code === 'unavailable' ? 'warn' : 'error']({ err, tool }, 'MCP tool failed');
      const body = e && (e.status < 500 || e.code === 'unavailable') ? errorBody(e.code, e.message) : internalErrorBody();
      return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] };
    }
  };

  server.registerTool(
    'get_address',
    {
      title: 'Get this return address',
      description:
        "Returns {address}: this address's id, name, taskId, inbound email address, createdAt and expiresAt " +
        '(the same as GET /api/v1/addresses/{id}). Takes no arguments.',
      inputSchema: GetAddressInput,
      outputSchema: AddressResponse,
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    (_args, extra) => run('get_address', extra, async () => JSON.stringify({ address: addressView(address, ctx.emailDomain) })),
  );

  server.registerTool(
    'list_events',
    {
      title: 'List events in order',
      description:
        "Returns a page {events, next_cursor, has_more} of this address's events with sequence > after, oldest first, " +
        'acknowledged or not (acknowledged_at tells them apart). Store next_cursor and pass it as `after` next time; while has_more is ' +
        'true, call again at once. With wait > 0 and nothing new, the call holds until an event arrives or wait seconds pass (empty page).',
      inputSchema: ListEventsInput,
      outputSchema: EventPage,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args, extra) =>
      run('list_events', extra, async (signal) => {
        const filter = parseEventFilter({ type: args.type, match: args.match, state: args.state }, 'argument');
        const after = await startOf(args.consumer, args.after);
        const granted = budget.take(pageBytes);
        const page = await service
          .listEvents(address, { after, limit: args.limit, wait: args.wait, filter, maxBytes: granted }, signal)
          .catch((err: unknown) => {
            budget.give(granted);
            throw err;
          });
        budget.give(granted - storedBytes(page.events));
        return eventPageJson(page);
      }),
  );

  server.registerTool(
    'ack_event',
    {
      title: 'Acknowledge an event',
      description:
        'Marks the event handled and returns {event} with acknowledged_at. Idempotent: acking again returns the same ' +
        'acknowledged_at. Ack what you have processed: the oldest acknowledged events are pruned first when the queue is full. ' +
        'An unknown event_id is an error (not_found).',
      inputSchema: AckEventInput,
      outputSchema: EventResponse,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    (args, extra) => run('ack_event', extra, async () => `{"event":${eventJson(await service.ackEvent(address, args.event_id))}}`),
  );

  server.registerTool(
    'wait_for_event',
    {
      title: 'Wait for the next event',
      description:
        'Returns {event, next_cursor}: the first event with sequence > after (of `type`: exact, or a prefix ending in .* such as "github.*"; and with every dotted path of `match` equal to its value, when given), waiting up to ' +
        `timeout seconds (default ${DEFAULT_WAIT_FOR_EVENT_SECONDS}, at most ${MAX_WAIT_FOR_EVENT_SECONDS}) for one to arrive; it returns within milliseconds of the delivery. On timeout ` +
        "event is null. Either way pass next_cursor as `after` next time: it is the returned event's sequence, or how far the queue " +
        'was scanned on timeout (with `type`, events of other types up to there are passed over; list_events shows every event). ' +
        'To wait longer than one call, call again with after = next_cursor (nothing is missed between calls). Does not acknowledge: call ack_event when done.',
      inputSchema: WaitForEventInput,
      outputSchema: WaitResult,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args, extra) =>
      run('wait_for_event', extra, async (signal) => {
        const filter = parseEventFilter({ type: args.type, match: args.match, state: args.state }, 'argument');
        const after = await startOf(args.consumer, args.after);
        const token = extra._meta?.progressToken;
        // Tells a client that carries a progress token that the call is alive, so it does not cut it.
        const started = Date.now();
        const ticker =
          token === undefined
            ? undefined
            : setInterval(() => {
                const waited = (Date.now() - started) / 1000;
                extra
                  .sendNotification({
                    method: 'notifications/progress',
                    params: {
                      progressToken: token,
                      progress: Math.floor(waited),
                      total: args.timeout,
                      message: `waiting for an event (${Math.floor(waited)} of ${args.timeout} s)`,
                    },
                  })
                  .catch(() => {});
              }, PROGRESS_INTERVAL_MS);
        // Its result holds one event at most.
        const granted = budget.take(ctx.maxEventBytes);
        try {
          const r = await service.waitForEvent(address, after, args.timeout, filter, signal).catch((err: unknown) => {
            budget.give(granted);
            throw err;
          });
          budget.give(granted - (r.event ? storedBytes([r.event]) : 0));
          return `{"event":${r.event ? eventJson(r.event) : 'null'},"next_cursor":${r.nextCursor}}`;
        } finally {
          clearInterval(ticker);
        }
      }),
  );

  registerClaimTools(server, ctx, run, Event);
  registerApprovalTools(server, address, ctx.approvals, run);
  registerSenderPolicyTools(server, ctx, run, Event);

  // registerTool advertises tools.listChanged: true; this server is stateless (one per request) and
  // its tools never change, so it never sends notifications/tools/list_changed.
  server.server.registerCapabilities({ tools: { listChanged: false } });
  return server;
}
