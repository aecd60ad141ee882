// /llms.txt and /llms-full.txt: plain-text guides for an agent reading them cold, with this
// deployment's real base URL, email domain and limits filled in. The prose lives in Markdown under
// guides/ (see guides/README.md); this file only renders it, once, at start.
import { readdirSync, readFileSync } from 'node:fs';
import { type Config, MAX_MCP_WAIT_SECONDS } from '../config.js';
import { ERROR_CATALOGUE, type ErrorCode } from '../domain/errors.js';
import { MAX_VALUE_DEPTH } from '../domain/json-depth.js';
import { MAX_WAIT_SECONDS } from '../domain/long-poll.js';
import { UNTRUSTED_CONTENT } from '../domain/trust.js';

const GUIDES_DIR = new URL('./guides/', import.meta.url);

/** A placeholder: {{name}} is a value, {{> name}} the partial guides/partials/<name>.md. */
const PLACEHOLDER = /\{\{\s*(>\s*)?([a-z0-9_]+)\s*\}\}/g;

function errorTable(): string {
  return (Object.entries(ERROR_CATALOGUE) as [ErrorCode, { status: number; description: string }][])
    .map(([code, e]) => `- ${e.status} ${code}: ${e.description}`)
    .join('\n');
}

/** Settings a public guide must never show: a connection string may hold a password; paths are the operator's. */
const PRIVATE_SETTINGS = new Set<string>(['databaseUrl', 'dataDir', 'smtpTlsCert', 'smtpTlsKey', 'metricsPort', 'metricsHost']);

/** Every value a guide may name, as text. A setting's placeholder is its Config key in snake_case. */
export function guideValues(c: Config): Record<string, string> {
  const values: Record<string, string> = {};
  for (const [key, value] of Object.entries(c)) {
    if (PRIVATE_SETTINGS.has(key)) continue;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      values[key.replace(/[A-Z]/g, (l) => `_${l.toLowerCase()}`)] = String(value);
    }
  }
  return {
    ...values,
    default_ttl_days: String(Math.round((c.defaultTtlSeconds / 86400) * 10) / 10),
    sse_heartbeat_seconds: String(c.sseHeartbeatMs / 1000),
    sse_drain_timeout_seconds: String(c.sseDrainTimeoutMs / 1000),
    max_value_depth: String(MAX_VALUE_DEPTH),
    max_value_depth_minus_one: String(MAX_VALUE_DEPTH - 1),
    max_wait_seconds: String(MAX_WAIT_SECONDS),
    max_mcp_wait_seconds: String(MAX_MCP_WAIT_SECONDS),
    error_table: errorTable(),
    untrusted_content: UNTRUSTED_CONTENT,
    create_access:
      c.createTokens.length > 0
        ? 'This deployment requires a create token: send Authorization: Bearer <token>, a token its operator gave you (CREATE_TOKENS). ' +
          'Without one, or with any other: 401 unauthorized (WWW-Authenticate: Bearer realm="return-address").'
        : 'This deployment needs no token to create. (An operator who sets CREATE_TOKENS makes create answer 401 unauthorized ' +
          'unless it carries Authorization: Bearer <one of the tokens>.)',
    max_ttl_rule:
      c.maxTtlSeconds !== undefined
        ? `This deployment caps expires_in_seconds at ${c.maxTtlSeconds} (MAX_TTL_SECONDS): more is 400 invalid_request naming the cap.`
        : 'This deployment sets no lower cap (MAX_TTL_SECONDS is unset; when set, a longer expires_in_seconds is 400 invalid_request naming the cap).',
    delivery_rate_rule:
      c.deliveryRateLimit !== undefined
        ? `This deployment accepts at most ${c.deliveryRateLimit} deliveries per address per ${c.deliveryRateWindowSeconds} s (DELIVERY_RATE_LIMIT per ` +
          'DELIVERY_RATE_WINDOW_SECONDS), inbox, capture URL and email together, shared by all instances: over it, 429 rate_limited with ' +
          'Retry-After (email: 451, try again later, with the seconds). Refused deliveries do not count.'
        : 'This deployment sets no delivery rate limit (DELIVERY_RATE_LIMIT is unset; when set, deliveries per address per ' +
          'DELIVERY_RATE_WINDOW_SECONDS, inbox, capture URL and email together, over it get 429 rate_limited with Retry-After, email 451).',
    retention_rule:
      c.retainAckedSeconds !== undefined
        ? `Acknowledged events are deleted ${c.retainAckedSeconds} s after their acknowledgement (RETAIN_ACKED_SECONDS), ` +
          'unacknowledged ones never: read what you need before you acknowledge it.'
        : 'Acknowledged events stay until pruned or until the address is deleted (RETAIN_ACKED_SECONDS is unset; when set, ' +
          'acknowledged events are deleted that long after their acknowledgement).',
  };
}

function readGuideFile(path: string): string {
  return readFileSync(new URL(path, GUIDES_DIR), 'utf8').replace(/\s+$/, '');
}

function fill(template: string, values: Record<string, string>, where: string): string {
  return template.replace(PLACEHOLDER, (_all, partial: string | undefined, name: string) => {
    if (partial !== undefined) return fill(readGuideFile(`partials/${name}.md`), values, `partials/${name}.md`);
    const value = values[name];
    if (value === undefined) throw new Error(`${where}: unknown placeholder {{${name}}}`);
    return value;
  });
}

/**
 * A guide is the folder guides/<name>/: its .md files in file-name order, one section each,
 * joined by a blank line. Adding a section is adding one file.
 */
export function renderGuide(name: 'llms' | 'llms-full', c: Config): string {
  const values = guideValues(c);
  const files = readdirSync(new URL(`${name}/`, GUIDES_DIR))
    .filter((f) => f.endsWith('.md'))
    .sort();
  return `${files.map((f) => fill(readGuideFile(`${name}/${f}`), values, `${name}/${f}`)).join('\n\n')}\n`;
}

export function llmsTxt(c: Config): string {
  return renderGuide('llms', c);
}

export function llmsFullTxt(c: Config): string {
  return renderGuide('llms-full', c);
}
