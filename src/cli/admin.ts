// `return-address admin list|show|delete|stats`: the operator's commands on the store itself
// (DATA_DIR or DATABASE_URL, as the service reads them), with no network surface. Tables for
// people, --json for scripts. Exit 0 done, 1 error (no store, no such address, bad usage).

import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import { type Config, ConfigError, loadConfig } from '../config.js';
import { clientKey } from '../domain/client-key.js';
import { type AddressSummary, AdminError, type AdminStore, type BulkMatch } from '../storage/admin-store.js';
import { openAdminStore } from '../storage/open-admin-store.js';

export const ADMIN_HELP = `Usage: return-address admin <list|show|delete|stats> [options]

Works on the store directly, configured like the service (DATA_DIR, or DATABASE_URL for
PostgreSQL); safe while the service runs: a deletion takes effect on the running service at once.

  list [--limit N] [--ip IP]   addresses, newest first (default 100), with events, unacknowledged
                               events, stored bytes, creation time and the creating client's IP
  show ADDRESS_ID              one address
  delete ADDRESS_ID            delete the address and all its events
  delete --ip IP | --created-before TIME [--yes]
                               every address created from IP (an IPv6 client by its
                               IPV6_PREFIX_BITS prefix) and/or created before TIME (ISO 8601,
                               e.g. 2026-11-01T00:00:00Z): prints how many would go; with --yes
                               deletes them and their events, in batches
  stats                        totals: addresses, events, bytes, oldest unacknowledged, top creators

Options:
  --json         JSON on stdout instead of a table
  --yes          carry out a bulk delete (without it, only the count is printed)
  -h, --help     this help

Exit codes: 0 success, 1 error (no store, no such address, bad usage).
`;

export const BACKUP_HELP = `Usage: return-address backup FILE

Copies the SQLite store (DATA_DIR) to FILE with SQLite's online backup: one consistent snapshot,
taken while the service keeps running. FILE must not exist. On PostgreSQL (DATABASE_URL) use
pg_dump instead. Exit codes: 0 success, 1 error.
`;

function table(rows: Record<string, unknown>[], columns: string[]): string {
  const cells = rows.map((r) => columns.map((c) => (r[c] === null || r[c] === undefined ? '-' : String(r[c]))));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return `${[line(columns.map((c) => c.toUpperCase())), ...cells.map(line)].join('\n')}\n`;
}

const LIST_COLUMNS = ['id', 'name', 'created_at', 'expires_at', 'created_ip', 'events', 'unacknowledged', 'bytes'];

function summaryText(a: AddressSummary): string {
  const width = Math.max(...Object.keys(a).map((k) => k.length));
  return `${Object.entries(a)
    .map(([k, v]) => `${k.padEnd(width)}  ${v ?? '-'}`)
    .join('\n')}\n`;
}

/** The service's configuration from the environment (DATA_DIR, DATABASE_URL), a bad value an AdminError. */
export function adminConfig(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) throw new AdminError(`invalid configuration: ${err.message}`);
    throw err;
  }
}

async function withStore<T>(fn: (store: AdminStore, config: Config) => Promise<T>): Promise<T> {
  const config = adminConfig();
  const store = await openAdminStore(config);
  try {
    return await fn(store, config);
  } finally {
    await store.close();
  }
}

function positiveInt(v: string | undefined, name: string, dflt: number): number {
  if (v === undefined) return dflt;
  if (!/^\d+$/.test(v) || Number(v) < 1) throw new AdminError(`--${name} must be a whole number of at least 1, got "${v}"`);
  return Number(v);
}

/**
 * What `delete --ip/--created-before` matches. An IP is matched as stored: an IPv4 address as
 * itself, an IPv6 one as its client key (the service stores the prefix); a stored key may be given
 * as it is listed.
 */
function bulkMatch(ip: string | undefined, before: string | undefined, ipv6PrefixBits: number): BulkMatch {
  const match: BulkMatch = {};
  if (ip !== undefined) match.ips = isIP(ip) ? [...new Set([ip, clientKey(ip, ipv6PrefixBits)])] : [ip];
  if (before !== undefined) {
    const at = /^\d{4}-\d{2}-\d{2}/.test(before) ? Date.parse(before) : Number.NaN;
    if (Number.isNaN(at)) throw new AdminError(`--created-before takes an ISO 8601 time such as 2026-11-01T00:00:00Z, got "${before}"`);
    match.createdBefore = at;
  }
  return match;
}

function describeMatch(match: BulkMatch): string {
  const parts: string[] = [];
  if (match.ips) parts.push(`created from ${match.ips.join(' or ')}`);
  if (match.createdBefore !== undefined) parts.push(`created before ${new Date(match.createdBefore).toISOString()}`);
  return parts.join(' and ');
}

/** Runs `admin …`; resolves to the exit code. */
export async function adminCommand(args: string[]): Promise<number> {
  const options = {
    json: { type: 'boolean' },
    limit: { type: 'string' },
    ip: { type: 'string' },
    'created-before': { type: 'string' },
    yes: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  } as const;
  const parse = () => {
    try {
      return parseArgs({ args, allowPositionals: true, strict: true, options });
    } catch (err) {
      throw new AdminError((err as Error).message);
    }
  };
  const { values, positionals } = parse();
  const [verb, ...operands] = positionals;
  if (values.help || verb === undefined) {
    process.stdout.write(ADMIN_HELP);
    return verb === undefined && !values.help ? 1 : 0;
  }
  const print = (json: unknown, text: string) => process.stdout.write(values.json ? `${JSON.stringify(json, null, 2)}\n` : text);
  const oneId = () => {
    if (operands.length !== 1) throw new AdminError(`admin ${verb} takes exactly one ADDRESS_ID`);
    return operands[0]!;
  };
  switch (verb) {
    case 'list':
      if (operands.length > 0) throw new AdminError('admin list takes no operands');
      return withStore(async (store) => {
        const rows = await store.list({ limit: positiveInt(values.limit, 'limit', 100), ip: values.ip });
        print({ addresses: rows }, rows.length === 0 ? 'no addresses\n' : table(rows as unknown as Record<string, unknown>[], LIST_COLUMNS));
        return 0;
      });
    case 'show': {
      const id = oneId();
      return withStore(async (store) => {
        const a = await store.show(id);
        if (!a) throw new AdminError(`no address ${id} in ${store.location}`);
        print({ address: a }, summaryText(a));
        return 0;
      });
    }
    case 'delete': {
      if (operands.length === 0 && (values.ip !== undefined || values['created-before'] !== undefined)) {
        return withStore(async (store, config) => {
          const match = bulkMatch(values.ip, values['created-before'], config.ipv6PrefixBits);
          const what = describeMatch(match);
          if (!values.yes) {
            const count = await store.deleteMatching(match, true);
            print(
              { would_delete: count, dry_run: true },
              `${count} address(es) ${what} would be deleted with their events; run again with --yes to delete them\n`,
            );
            return 0;
          }
          const count = await store.deleteMatching(match, false);
          print({ deleted: count }, `deleted ${count} address(es) ${what} and their events\n`);
          return 0;
        });
      }
      if (values.ip !== undefined || values['created-before'] !== undefined)
        throw new AdminError('admin delete takes an ADDRESS_ID or --ip/--created-before, not both');
      const id = oneId();
      return withStore(async (store) => {
        if (!(await store.delete(id))) throw new AdminError(`no address ${id} in ${store.location}`);
        print({ deleted: id }, `deleted ${id} and its events\n`);
        return 0;
      });
    }
    case 'stats':
      if (operands.length > 0) throw new AdminError('admin stats takes no operands');
      return withStore(async (store) => {
        const s = await store.stats(Date.now());
        const { top_creators: top, ...totals } = s;
        const width = Math.max(...Object.keys(totals).map((k) => k.length));
        const text = `${Object.entries(totals)
          .map(([k, v]) => `${k.padEnd(width)}  ${v ?? '-'}`)
          .join('\n')}\n\nTop creators:\n${table(top as unknown as Record<string, unknown>[], ['created_ip', 'addresses'])}`;
        print(s, `${text}`);
        return 0;
      });
    default:
      throw new AdminError(`unknown admin command "${verb}"\n\n${ADMIN_HELP}`);
  }
}
