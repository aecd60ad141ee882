// Rewrites the validator's (ajv's) messages into the documented error message (design.md, "Errors"):
// always the field, where it was sent and what it must be, never ajv's own wording alone.
import { HTTP_DEDUPE_KEY_PATTERN } from '../../domain/dedupe-key.js';
import { STORABLE_TEXT } from '../schemas.js';

export interface AjvIssue {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
  /** With ajv's verbose option: the value that failed, and the schema holding the failed keyword. */
  data?: unknown;
  parentSchema?: {
    type?: string;
    minimum?: number;
    maximum?: number;
    minLength?: number;
    maxLength?: number;
    pattern?: string;
    properties?: Record<string, unknown>;
  };
}

const PART_NAMES: Record<string, string> = { body: 'body field', querystring: 'query parameter', params: 'path parameter', headers: 'header' };

/** What the value must be, from the failing schema: "an integer from 0 to 100", "1-255 characters". */
function expectation(issue: AjvIssue): string {
  const s = issue.parentSchema ?? {};
  const k = issue.keyword;
  if (k === 'type' && Array.isArray(issue.data)) return 'is given more than once; send it once';
  if ((k === 'type' || k === 'minimum' || k === 'maximum') && s.type === 'integer') {
    const range =
      s.minimum !== undefined && s.maximum !== undefined
        ? ` from ${s.minimum} to ${s.maximum}`
        : s.minimum !== undefined
          ? ` of at least ${s.minimum}`
          : s.maximum !== undefined
            ? ` of at most ${s.maximum}`
            : '';
    const exactly = s.maximum === Number.MAX_SAFE_INTEGER ? ' (the largest integer JavaScript holds exactly, Number.MAX_SAFE_INTEGER)' : '';
    return `must be an integer${range}${exactly}, written in plain decimal digits`;
  }
  if ((k === 'minLength' || k === 'maxLength') && (s.minLength !== undefined || s.maxLength !== undefined)) {
    return `must be ${s.minLength ?? 0}-${s.maxLength ?? 'any number of'} characters long`;
  }
  if (k === 'enum' && Array.isArray(issue.params?.allowedValues)) return `must be one of ${issue.params.allowedValues.join(', ')}`;
  if (k === 'maxItems' && typeof issue.params?.limit === 'number') return `holds more than ${issue.params.limit} entries; send at most ${issue.params.limit}`;
  if (k === 'pattern' && s.pattern === STORABLE_TEXT) return 'must not contain the character U+0000 or a lone surrogate (an unpaired \\ud800-\\udfff escape)';
  if (k === 'pattern' && s.pattern === HTTP_DEDUPE_KEY_PATTERN) return 'must not contain control characters (U+0000-U+001F, U+007F) or a lone surrogate';
  return issue.message ?? 'is invalid';
}

/** Always names the field and what it must be: "Invalid query parameter 'limit': must be an integer from 1 to 100." */
export function describeValidation(issue: AjvIssue | undefined, context: string | undefined): string {
  const params = issue?.params ?? {};
  if (issue?.keyword === 'additionalProperties') {
    const name = String(params.additionalProperty);
    const allowed = Object.keys(issue.parentSchema?.properties ?? {});
    if (context === 'querystring') {
      return (
        `Unknown query parameter '${name}': ` +
        (allowed.length === 0 ? 'this endpoint takes no query parameters.' : `the allowed ones are ${allowed.join(', ')}.`)
      );
    }
    // An event's trust is the service's word about its sender: a sender asking to set it is told so.
    const why = name === 'trust' && allowed.includes('data') ? 'trust is written only by the service, from what it checked itself; ' : '';
    return (
      `Unknown property '${name}' in the ${context ?? 'body'}: ${why}` +
      (allowed.length === 0 ? 'no properties are allowed.' : `the allowed ones are ${allowed.join(', ')}.`)
    );
  }
  const path = (issue?.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
  const field = issue?.keyword === 'required' ? String(params.missingProperty) : path;
  if (field === '') {
    return context === 'body' ? 'The body must be a JSON object, such as {}.' : `Invalid ${PART_NAMES[context ?? ''] ?? 'request'}s.`;
  }
  const name = field === 'idempotency-key' ? 'Idempotency-Key' : field;
  const what = issue?.keyword === 'required' ? 'is required' : issue ? expectation(issue) : 'is invalid';
  return `Invalid ${PART_NAMES[context ?? ''] ?? 'field'} '${name}': ${what}.`;
}
