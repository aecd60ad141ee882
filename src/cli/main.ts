// `return-address` CLI (design.md, "Agent toolkit and live view"): a thin shell over the TypeScript client. JSON results go to
// stdout, human messages to stderr; exit 0 done/found, 2 wait timed out, 1 error.
import { randomBytes } from 'node:crypto';
import { closeSync, fchmodSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ask, ASK_HELP } from './ask.js';
import { parseMatch, ReturnAddress, ReturnAddressError, resolveUrl, type CreateAddressResponse, type CreateEventBody, type WaitResult } from '@return-address/client';

type Saved = CreateAddressResponse & { cursor: number };

export class UsageError extends Error {}

const COMMON = 'Common options:\n  --url URL      service base URL (default $RETURN_ADDRESS_URL, else http://localhost:3000)\n  -h, --help     this help\n';
const SAVE = '  --save FILE    the file `create --save` wrote (create response + cursor)\n';

const HELP: Record<string, string> = {
  main: `Usage: return-address <command> [options]

Commands:
  serve      run the service (same as npm start; configured by environment variables)
  create     create an address; --save FILE keeps the response (0600) for the other commands
  wait       wait for the first matching event and print it
  events     print the events after the saved cursor and advance it
  get        print the address
  ack        acknowledge an event
  deliver    deliver an event to the address's inbox URL
  delete     delete the address and its events
  ask        ask a person: an approval page's URL on stderr, their answer's event on stdout
  admin      operator commands on the store itself: list, show, delete, stats
  backup     copy the SQLite store to a file while the service runs

Run \`return-address <command> --help\` for a command's options. JSON goes to stdout, messages to
stderr. Exit codes: 0 success, 2 wait timed out, 1 error (ask: 0 first option, 1 another, 2 no answer).
`,
  serve: `Usage: return-address serve\n\nRuns the service in the foreground, exactly like \`npm start\`. Configure it with the\nenvironment variables of the README (PORT, SMTP_PORT, BASE_URL, DATA_DIR or DATABASE_URL, ...).\n`,
  create: `Usage: return-address create [--name N] [--task-id T] [--ttl SECONDS] [--save FILE]\n\nCreates an address and prints the create response. With --save, writes that response plus\n"cursor": 0 to FILE with mode 0600 (it holds the read token and the inbox secret).\nA service whose operator set CREATE_TOKENS needs one: $RETURN_ADDRESS_CREATE_TOKEN.\n\n${COMMON}`,
  wait: `Usage: return-address wait --save FILE [--type T] [--match path=value]... [--timeout S] [--ack]\n\nWaits (long-polling, reconnecting after network errors) for the first event after the saved\ncursor with type T and every path=value (dotted into the event: data.from.address=x), prints it\nas JSON and exits 0; exits 2 when --timeout seconds (default 300) pass without one.\n--ack acknowledges the event and advances the saved cursor to it, so the next wait starts\nafter it; without --ack the cursor stays and the same event is found again.\n\n${SAVE}${COMMON}`,
  events: `Usage: return-address events --save FILE [--after N] [--limit N] [--wait S]\n\nPrints one page {events, next_cursor, has_more} after the saved cursor (or --after) and saves\nnext_cursor as the cursor. --wait long-polls up to S seconds (max 25) when there is none.\n\n${SAVE}${COMMON}`,
  get: `Usage: return-address get --save FILE\n\nPrints {"address": ...}.\n\n${SAVE}${COMMON}`,
  ack: `Usage: return-address ack --save FILE EVENT_ID\n\nAcknowledges the event (idempotent) and prints {"event": ...}.\n\n${SAVE}${COMMON}`,
  deliver: `Usage: return-address deliver --save FILE [--type T] [--source S] [--data JSON] [--key K]\n\nPOSTs an event to the saved inbox URL and prints {"event", "duplicate"}. --data is any JSON\nvalue; --key is an idempotency key.\n\n${SAVE}${COMMON}`,
  ask: ASK_HELP,
  delete: `Usage: return-address delete --save FILE\n\nDeletes the address and all its events; prints {"deleted": "<address id>"}.\n\n${SAVE}${COMMON}`,
};

const common = { url: { type: 'string' }, help: { type: 'boolean', short: 'h' }, save: { type: 'string' } } as const;

function parse<O extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: O, positionals = false) {
  try {
    return parseArgs({ args, options: { ...common, ...options }, allowPositionals: positionals, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

export function out(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function loadSaved(file: string | undefined): Saved {
  if (!file) throw new UsageError('--save FILE is required (the file `return-address create --save FILE` wrote)');
  let saved: Saved;
  try {
    saved = JSON.parse(readFileSync(file, 'utf8')) as Saved;
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
  }
  if (!saved?.address?.id || !saved.credentials?.read_token) throw new UsageError(`${file} is not a saved create response`);
  if (typeof saved.cursor !== 'number') saved.cursor = 0;
  return saved;
}

/**
 * Write-then-rename, so a crash never leaves a half-written file with the only copy of the token.
 * The temporary name is unpredictable and created exclusively (O_EXCL, mode 0600): with a name
 * derived from the pid, another local user could plant a symlink or a readable file there first.
 */
function writeSaved(file: string, saved: Saved): void {
  const tmp = `${file}.${randomBytes(12).toString('hex')}.tmp`;
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeFileSync(fd, `${JSON.stringify(saved, null, 2)}\n`);
    fchmodSync(fd, 0o600);
  } catch (err) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw err;
  }
  closeSync(fd);
  renameSync(tmp, file);
}

function intOption(v: string | undefined, name: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new UsageError(`--${name} must be a non-negative number, got "${v}"`);
  return n;
}

/** A progress line on stderr, only for a human watching a terminal. */
function spinner(label: string): () => void {
  if (!process.stderr.isTTY) return () => {};
  const frames = '⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏';
  const start = Date.now();
  let i = 0;
  const t = setInterval(() => {
    process.stderr.write(`\r${frames[i++ % frames.length]} ${label} ${Math.round((Date.now() - start) / 1000)}s `);
  }, 100);
  return () => { clearInterval(t); process.stderr.write('\r\x1b[K'); };
}

async function run(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '-h' || command === '--help' || command === 'help') {
    process.stdout.write(HELP.main!);
    return command === undefined ? 1 : 0;
  }
  // The operator's commands open the store itself (SQLite, pg): loaded only when asked for.
  if (command === 'admin') return (await import('./admin.js')).adminCommand(rest);
  if (command === 'backup') return (await import('./backup.js')).backupCommand(rest);
  if (!(command in HELP) || command === 'main') throw new UsageError(`unknown command "${command}"\n\n${HELP.main}`);
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(HELP[command]!);
    return 0;
  }
  switch (command) {
    case 'serve': {
      parse(rest, {});
      const { main } = await import('../server.js');
      await main();
      return -1; // keeps running until a signal
    }
    case 'create': {
      const { values } = parse(rest, { name: { type: 'string' }, 'task-id': { type: 'string' }, ttl: { type: 'string' } });
      const ra = await ReturnAddress.create({ url: values.url, name: values.name, taskId: values['task-id'], ttl: intOption(values.ttl, 'ttl') });
      const created = ra.created!;
      if (values.save) {
        writeSaved(values.save, { ...created, cursor: 0 });
        process.stderr.write(`created ${created.address.email} (${created.address.id}); saved to ${values.save}\n`);
      }
      out(created);
      return 0;
    }
    case 'wait': {
      const { values } = parse(rest, { type: { type: 'string' }, match: { type: 'string', multiple: true }, timeout: { type: 'string' }, ack: { type: 'boolean' } });
      const saved = loadSaved(values.save);
      const match = parseMatchOption(values.match ?? []);
      const ra = ReturnAddress.fromCreated(saved, { url: resolveUrl(values.url) });
      const stop = spinner(`waiting for ${values.type ?? 'an event'} on ${saved.address.email}`);
      let result: WaitResult;
      try {
        result = await ra.waitFor({ type: values.type, match, timeout: intOption(values.timeout, 'timeout') ?? 300 });
      } finally {
        stop();
      }
      if (!result.event) {
        process.stderr.write(`timed out: no matching event after cursor ${saved.cursor}\n`);
        return 2;
      }
      if (values.ack) {
        result.event = await ra.ack(result.event.id);
        if (values.save) writeSaved(values.save, { ...saved, cursor: result.cursor });
      }
      out(result.event);
      return 0;
    }
    case 'events': {
      const { values } = parse(rest, { after: { type: 'string' }, limit: { type: 'string' }, wait: { type: 'string' } });
      const saved = loadSaved(values.save);
      const ra = ReturnAddress.fromCreated(saved, { url: resolveUrl(values.url) });
      const page = await ra.page({ after: intOption(values.after, 'after') ?? saved.cursor, limit: intOption(values.limit, 'limit'), wait: intOption(values.wait, 'wait') });
      writeSaved(values.save!, { ...saved, cursor: page.next_cursor });
      out(page);
      return 0;
    }
    case 'get': {
      const { values } = parse(rest, {});
      const ra = ReturnAddress.fromCreated(loadSaved(values.save), { url: resolveUrl(values.url) });
      out({ address: await ra.get() });
      return 0;
    }
    case 'ack': {
      const { values, positionals } = parse(rest, {}, true);
      if (positionals.length !== 1) throw new UsageError('ack takes exactly one EVENT_ID');
      const ra = ReturnAddress.fromCreated(loadSaved(values.save), { url: resolveUrl(values.url) });
      out({ event: await ra.ack(positionals[0]!) });
      return 0;
    }
    case 'deliver': {
      const { values } = parse(rest, { type: { type: 'string' }, source: { type: 'string' }, data: { type: 'string' }, key: { type: 'string' } });
      const ra = ReturnAddress.fromCreated(loadSaved(values.save), { url: resolveUrl(values.url) });
      const body: CreateEventBody = {};
      if (values.type !== undefined) body.type = values.type;
      if (values.source !== undefined) body.source = values.source;
      if (values.data !== undefined) {
        try {
          body.data = JSON.parse(values.data);
        } catch {
          throw new UsageError(`--data must be JSON, got ${values.data}`);
        }
      }
      out(await ra.deliver(body, { idempotencyKey: values.key }));
      return 0;
    }
    case 'ask':
      return ask(rest);
    case 'delete': {
      const { values } = parse(rest, {});
      const saved = loadSaved(values.save);
      await ReturnAddress.fromCreated(saved, { url: resolveUrl(values.url) }).delete();
      process.stderr.write(`deleted ${saved.address.id}; ${values.save} now holds a dead token\n`);
      out({ deleted: saved.address.id });
      return 0;
    }
  }
  return 1;
}

function parseMatchOption(pairs: string[]) {
  try {
    return parseMatch(pairs);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

export async function cli(argv: string[]): Promise<void> {
  try {
    const code = await run(argv);
    if (code >= 0) process.exitCode = code;
  } catch (err) {
    if (err instanceof UsageError || (err as Error).name === 'AdminError') process.stderr.write(`return-address: ${(err as Error).message}\n`);
    else if (err instanceof ReturnAddressError) process.stderr.write(`return-address: ${err.code} (HTTP ${err.status}): ${err.message}\n`);
    else process.stderr.write(`return-address: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  }
}
