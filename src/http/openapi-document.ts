// What @fastify/swagger cannot say from the route schemas alone, added to the document it generates
// (its `transformObject`), so /openapi.json is one a client generator can trust:
// - every schema with a `title` (Address, Event, Error, …) becomes components.schemas[title] and is
//   referenced by $ref wherever a route uses it, so generated clients get named types. The routes
//   keep embedding the TypeBox schemas themselves: validation, serialization and the TypeScript
//   client's `Static<>` types stay exactly what they were. Two different schemas under one title
//   fail the document's build (and so the tests), instead of one silently standing for the other;
// - an operation marked `x-optional-body` gets `requestBody.required: false` (@fastify/swagger
//   always writes true);
// - operations that exist only to be refused (MCP's GET and DELETE: 405), which have no route;
// - components.responses.MethodNotAllowed: what any other method on a documented path answers.
import { isDeepStrictEqual } from 'node:util';
import type { TSchema } from 'typebox';
import { ErrorBody } from './schemas.js';

/**
 * In an operationId, stands for the method (`capture${PER_METHOD}` → captureGet, capturePost, …): one
 * route of several methods shares one schema, and every operationId must be unique.
 */
export const PER_METHOD = '{Method}';

/** The extension a route schema sets (`'x-optional-body': true`) when its body may be omitted. */
export const OPTIONAL_BODY = 'x-optional-body';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Operations added to the document as they are, by path and method (lower case). */
export type ExtraOperations = Record<string, Record<string, JsonObject>>;

export const METHOD_NOT_ALLOWED_REF = { $ref: '#/components/responses/MethodNotAllowed' } as const;

/** Titles of the schemas in `named`, mapped to their own description (the one their component keeps). */
function namedDescriptions(named: readonly TSchema[]): Map<string, string | undefined> {
  const out = new Map<string, string | undefined>();
  for (const schema of named) {
    const { title, description } = schema as { title?: string; description?: string };
    if (typeof title !== 'string') throw new Error('a component schema needs a title');
    out.set(title, description);
  }
  return out;
}

/** Replaces, bottom-up, every schema titled as a component by a $ref to it, filling `components`. */
function referenceComponents(node: Json, names: Map<string, string | undefined>, components: JsonObject): Json {
  if (Array.isArray(node)) return node.map((n) => referenceComponents(n, names, components));
  if (!isObject(node)) return node;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(node)) out[k] = referenceComponents(v, names, components);
  const title = out.title;
  if (typeof title !== 'string' || !names.has(title) || typeof out.type !== 'string') return out;
  const { description, ...rest } = out;
  const own = names.get(title);
  const body: JsonObject = own === undefined ? rest : { ...rest, description: own };
  const existing = components[title];
  if (existing === undefined) components[title] = body;
  else if (!isDeepStrictEqual(existing, body)) throw new Error(`OpenAPI: two different schemas are titled ${title}`);
  const ref: JsonObject = { $ref: `#/components/schemas/${title}` };
  return description === undefined || description === own ? ref : { ...ref, description };
}

/** A response's schema that only repeats the response's description (the error statuses) loses it. */
function dropRepeatedDescriptions(paths: Json): void {
  if (!isObject(paths)) return;
  for (const item of Object.values(paths)) {
    for (const op of Object.values(isObject(item) ? item : {})) {
      const responses = isObject(op) && isObject(op.responses) ? op.responses : {};
      for (const response of Object.values(responses)) {
        if (!isObject(response) || !isObject(response.content)) continue;
        for (const media of Object.values(response.content)) {
          if (isObject(media) && isObject(media.schema) && media.schema.description === response.description) delete media.schema.description;
        }
      }
    }
  }
}

export interface FinishOptions {
  /** Schemas to name in components.schemas, each with a `title` (its component name). */
  components: readonly TSchema[];
  extraOperations?: ExtraOperations;
}

/** The transformObject of @fastify/swagger: the generated document, finished as described above. */
export function finishDocument(opts: FinishOptions): (input: { openapiObject: unknown } | { swaggerObject: unknown }) => JsonObject {
  const names = namedDescriptions(opts.components);
  return (input) => {
    const doc = structuredClone('openapiObject' in input ? input.openapiObject : input.swaggerObject) as JsonObject;
    const paths = (isObject(doc.paths) ? doc.paths : {}) as Record<string, JsonObject>;
    for (const [path, operations] of Object.entries(opts.extraOperations ?? {})) {
      paths[path] = { ...(paths[path] ?? {}), ...operations };
    }
    for (const item of Object.values(paths)) {
      for (const [method, shared] of Object.entries(item)) {
        // The methods of one route share one operation object: each gets its own.
        const op = isObject(shared) ? (item[method] = { ...shared }) : shared;
        if (isObject(op) && typeof op.operationId === 'string') {
          op.operationId = op.operationId.replace(PER_METHOD, method.charAt(0).toUpperCase() + method.slice(1));
        }
        if (!isObject(op) || op[OPTIONAL_BODY] === undefined) continue;
        delete op[OPTIONAL_BODY];
        if (isObject(op.requestBody)) op.requestBody.required = false;
      }
    }
    const schemas: JsonObject = {};
    doc.paths = referenceComponents(paths, names, schemas);
    dropRepeatedDescriptions(doc.paths);
    const components = (isObject(doc.components) ? doc.components : {}) as JsonObject;
    const errorRef = referenceComponents(structuredClone(ErrorBody) as unknown as Json, names, schemas);
    components.schemas = { ...(isObject(components.schemas) ? components.schemas : {}), ...schemas };
    components.responses = {
      MethodNotAllowed: {
        description:
          '`method_not_allowed`: the path exists, but not with this method. Any method a path does not document ' +
          'answers this (HEAD is answered wherever GET is).',
        headers: { Allow: { description: 'The methods the path has, e.g. "GET, HEAD" or "POST".', schema: { type: 'string' } } },
        content: { 'application/json': { schema: errorRef } },
      },
    };
    doc.components = components;
    return doc;
  };
}
