// The query parameters every read of the queue shares (design.md, "Reading without loss"): the filter (`type`,
// `match`, `state`) and `consumer`, for GET …/events and GET …/events/stream. The schema documents
// and bounds them; their values are read from the raw query string, because the router turns
// digit-only values into numbers (a type "404" or a consumer "007" must stay text), and checked by
// the domain (event-filter.ts, consumers.ts), which names the parameter and the fix.
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { consumerName } from '../consumers/consumers.js';
import {
  type EventFilter,
  MAX_FILTER_COST,
  MAX_MATCH_ARRAY_MEMBERS,
  MAX_MATCH_CONDITIONS,
  MAX_TYPE_PATTERNS,
  parseEventFilter,
  STATE_HELP,
} from '../domain/event-filter.js';

/** A query value as the router leaves it: text, or a number when it is only digits. */
const QueryText = Type.Union([Type.String(), Type.Integer()]);
const queryText = (options: { description: string; examples?: string[] }) => Type.Union([Type.String(), Type.Integer()], options);
const repeatable = (max: number, description: string) =>
  Type.Optional(Type.Union([Type.String(), Type.Integer(), Type.Array(QueryText, { maxItems: max * 10 })], { description }));

/**
 * A closed query schema's description, naming its parameters from the schema itself, so the list
 * a client reads can never drift from what the route takes (the 400 for an unknown one names them
 * from the same properties: plugins/validation-messages.ts).
 */
export const onlyTheseParameters = (properties: Record<string, unknown>): string =>
  `Only ${Object.keys(properties).join(', ')}: any other query parameter is 400 invalid_request naming it and the allowed ones.`;

/** The filter and consumer parameters, to spread into a route's query schema. */
export const READ_OPTION_PROPERTIES = {
  type: repeatable(
    MAX_TYPE_PATTERNS,
    `Only events of this type: exact (stripe.invoice.paid) or a prefix ending in .* (stripe.*). Repeat it for any of several (at most ${MAX_TYPE_PATTERNS}).`,
  ),
  match: repeatable(
    MAX_MATCH_CONDITIONS,
    `Only events where a dotted path equals a value: path=value, e.g. data.from.address=a@b.c or trust.verified=true. ` +
      `Repeat it for all of several (at most ${MAX_MATCH_CONDITIONS}). Paths start with data, metadata, trust, type, source, id, address_id, sequence or dedupe_key; ` +
      'a digit segment indexes an array (data.links.0.url). Strings compare exactly; a number, true, false or null matches its JSON text (so =true matches JSON true and "true"); ' +
      `a path holding an array matches when one of its first ${MAX_MATCH_ARRAY_MEMBERS} members does; objects and missing paths never match. ` +
      `A filter costs at most ${MAX_FILTER_COST} JSON look-ups per event: each condition on data or metadata its path segments, doubled per digit segment.`,
  ),
  state: Type.Optional(queryText({ description: `Which events: ${STATE_HELP}.` })),
  consumer: Type.Optional(
    queryText({
      description:
        'A named consumer (pattern [a-z0-9_.:-]{1,64}) whose position the server keeps: without after, the read starts after its stored position ' +
        '(0 for a new name); with after=N, N is stored first (durably), then events after N are read. So asking for the next page (after=next_cursor) ' +
        'confirms the previous one. GET …/consumers lists them.',
      examples: ['worker-1'],
    }),
  ),
} as const;

export interface ReadOptions {
  filter: EventFilter;
  consumer: string | undefined;
  /** Whether the query named `after` (a consumer then seeks there). */
  afterGiven: boolean;
}

/**
 * The filter and consumer of a read, from the raw query string; 400 for a bad one. Runs after the
 * schema, which has refused a repeated `state` or `consumer`.
 */
export function readOptions(request: FastifyRequest): ReadOptions {
  const url = request.raw.url ?? '';
  const q = url.indexOf('?');
  const params = new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
  const filter = parseEventFilter({ type: params.getAll('type'), match: params.getAll('match'), state: params.get('state') ?? undefined });
  const consumer = params.get('consumer');
  return { filter, consumer: consumer === null ? undefined : consumerName(consumer), afterGiven: params.has('after') };
}
