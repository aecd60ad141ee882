// The one line a service logs at start (docs/design.md, "Running it"): the settings in force, so an operator can
// see what a process runs with, and never a secret in it. Every Config field is logged, so a
// setting added later shows up without touching this file; a field whose name says it holds a
// secret (token, secret, password) is replaced by how many values it has, and DATABASE_URL loses
// its password (and any password in its query).
import type { Config } from './config.js';
import type { Log } from './domain/ports.js';

const SECRET_NAME = /tokens?$|secrets?$|password|credential/i;

/** postgres://user:pw@host/db?password=x → postgres://user:[REDACTED]@host/db?password=[REDACTED] */
export function redactDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '[REDACTED]';
    for (const key of [...u.searchParams.keys()]) {
      if (/pass|secret|key|token/i.test(key)) u.searchParams.set(key, '[REDACTED]');
    }
    return u.toString().replaceAll('%5BREDACTED%5D', '[REDACTED]');
  } catch {
    return '[REDACTED: not a URL]';
  }
}

/** A group of settings (config.push): logged field by field under the same rule, so a secret inside one is redacted too. */
const isGroup = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v) && !Buffer.isBuffer(v);

export function settingsForLog(config: Config | Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) {
    if (value === undefined) continue;
    if (key === 'databaseUrl') out[key] = redactDatabaseUrl(String(value));
    else if (SECRET_NAME.test(key)) out[key] = Array.isArray(value) ? `[REDACTED: ${value.length} set]` : '[REDACTED]';
    else if (isGroup(value)) out[key] = settingsForLog(value);
    else out[key] = value;
  }
  if ('port' in config) out.store = config.databaseUrl === undefined ? 'sqlite' : 'postgres';
  return out;
}

/** 127.0.0.0/8, ::1 and localhost: nobody but this machine can reach the service there. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export function logStartupSettings(config: Config, log: Log): void {
  log.info({ settings: settingsForLog(config) }, 'settings in force');
  if (!config.baseUrlConfigured && !isLoopbackHost(config.host)) {
    log.warn(
      { host: config.host, baseUrl: config.baseUrl },
      `BASE_URL is unset while listening on ${config.host}: every URL handed out (inbox, events, MCP) will name ${config.baseUrl}, ` +
        'which other machines cannot reach. Set BASE_URL to the public origin (e.g. https://ra.example.com).',
    );
  }
}
