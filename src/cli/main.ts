// `return-address` CLI (design.md, "Agent toolkit and live view"): a thin shell over the TypeScript client. JSON results go to
// stdout, human messages to stderr; exit 0 done/found, 2 wait timed out, 1 error.

import { type ParseArgsConfig, parseArgs } from 'node:util';
import {
  type CreateEventBody,
  indentJson,
  MAX_WAIT_SECONDS,
  parseMatch,
  ReturnAddress,
  ReturnAddressError,
  resolveUrl,
  sourceOf,
  type WaitResult,
} from '@return-address/client';
import { UNTRUSTED_CONTENT } from '../domain/trust.js';
import { ASK_HELP, ask } from './ask.js';
import { channelVerb } from './channel.js';
import { CONSUME_HELP, consume } from './consume.js';
import { forwardVerb } from './forward.js';
import { rotateVerb } from './rotate.js';
import { readSaved } from './saved-epoch.js';
import { loadSaved as readSavedFile, type Saved, SavedFileError, savedUrl, writeSaved } from './saved-file.js';
import { senderPolicyVerb } from './sender-policy.js';
import { signingSecretsVerb } from './signing-secrets.js';
import { subscribeVerb } from './subscribe.js';
import type { CliVerb, VerbKit } from './verb.js';

/** Verbs in files of their own: one registration line each. */
const VERBS: Record<string, CliVerb> = {
  'signing-secrets': signingSecretsVerb,
  policy: senderPolicyVerb,
  rotate: rotateVerb,
  subscribe: subscribeVerb,
  forward: forwardVerb,
  channel: channelVerb,
};

export class UsageError extends Error {}

const COMMON =
  'Common options:\n  --url URL      service base URL (default: the one saved in FILE, else $RETURN_ADDRESS_URL, else http://localhost:3000)\n  -h, --help     this help\n';
const SAVE =
  '  --save FILE    the file `create --save` wrote (create response + cursor + url, and the store epoch of\n' +
  '                 the cursor: after a restore of the service, reads say so on stderr and start again from 0)\n';

const HELP: Record<string, string> = {
  main: `Usage: return-address <command> [options]

Commands:
  serve      run the service (same as npm start; configured by environment variables)
  create     create an address; --save FILE keeps the response (0600) for the other commands
  wait       wait for the first matching event and print it
  events     print the events after the saved cursor (--advance moves it)
  consume    run a command once per event, at-least-once, in order
  get        print the address
  ack        acknowledge an event
  deliver    deliver an event to the address's inbox URL
  delete     delete the address and its events
  ask        ask a person: an approval page's URL on stderr, their answer's event on stdout
  admin      operator commands on the store itself: list, show, delete, stats
  backup     copy the SQLite store to a file while the service runs
  restore    put a backup back (service stopped); gives the store a new epoch
${Object.entries(VERBS)
  .map(([name, v]) => `  ${name.padEnd(10)} ${v.summary}`)
  .join('\n')}

Run \`return-address <command> --help\` for a command's options. JSON goes to stdout, messages to
stderr. Exit codes: 0 success, 2 wait timed out, 1 error (ask: 0 first option, 3 another, 2 no answer,
1 error).
`,
  serve: `Usage: return-address serve\n\nRuns the service in the foreground, exactly like \`npm start\`. Configure it with the\nenvironment variables in docs/deploy.md, "Every setting" (PORT, SMTP_PORT, BASE_URL, DATA_DIR or\nDATABASE_URL, ...).\n`,
  create: `Usage: return-address create [--name N] [--task-id T] [--ttl SECONDS] [--save FILE [--print-credentials]]\n\nCreates an address. Without --save, prints the whole create response (credentials included).\nWith --save, writes that response plus "cursor": 0 and "url" (this service) to FILE with mode\n0600 and prints only {address, endpoints: {events_url, mcp_url}, saved_to}: no credential reaches\nstdout (an agent's transcript). --print-credentials prints the whole response as well.\nhook_url and inbox_url carry the inbox secret, so they are not printed: FILE is the create\nresponse, so read one when you need it: jq -r .endpoints.hook_url FILE\nA service whose operator set CREATE_TOKENS needs one: $RETURN_ADDRESS_CREATE_TOKEN.\n\n${COMMON}`,
  wait: `Usage: return-address wait --save FILE [--type T] [--match path=value]... [--timeout S] [--ack]\n\nWaits (long-polling, reconnecting after network errors) for the first event after the saved\ncursor with type T and every path=value (dotted into the event: data.from.address=x), prints it\nas JSON and exits 0; exits 2 when --timeout seconds (default 300) pass without one.\n--ack waits only for an event not acknowledged yet and acknowledges it, so a loop of\n\`wait --ack\` returns each matching event once; without --type/--match it also advances the\nsaved cursor to it. A filtered wait never moves the saved cursor: the events it passed over\nare still there for events and consume.\nFor a provider event or a mail, add --match trust.verified=true (and trust.ingress=capture or\nemail): only trust is written by the service; type, source and data are whatever the sender sent.\n${UNTRUSTED_CONTENT}\n\n${SAVE}${COMMON}`,
  events: `Usage: return-address events --save FILE [--after N] [--limit N] [--wait S] [--type T]... [--match path=value]... [--advance]\n\nPrints one page {events, next_cursor, has_more} after the saved cursor (or --after). The saved\ncursor moves to next_cursor only with --advance, once you have handled the page (or use\nconsume, which moves it event by event). --wait long-polls up to S seconds (max ${MAX_WAIT_SECONDS}) when there\nis none; --type and --match filter on the service.\n\n${SAVE}${COMMON}`,
  consume: CONSUME_HELP,
  get: `Usage: return-address get --save FILE\n\nPrints {"address": ...} as the service holds it now (no credential, no endpoint URL).\nThe URLs that carry a secret are in FILE, the create response: jq -r .endpoints.hook_url FILE\n\n${SAVE}${COMMON}`,
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

/** Prints `value` as JSON: the service's own text when it came from the service, so every number keeps its digits. */
export function out(value: unknown): void {
  const text = sourceOf(value);
  process.stdout.write(`${text === undefined ? JSON.stringify(value, null, 2) : indentJson(text)}\n`);
}

export function loadSaved(file: string | undefined): Saved {
  try {
    return readSavedFile(file);
  } catch (err) {
    if (err instanceof SavedFileError) throw new UsageError(err.message);
    throw err;
  }
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
  return () => {
    clearInterval(t);
    process.stderr.write('\r\x1b[K');
  };
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
  if (command === 'restore') return (await import('./restore.js')).restoreCommand(rest);
  const verb = Object.hasOwn(VERBS, command) ? VERBS[command] : undefined;
  if (verb !== undefined) {
    if (rest.includes('--help') || rest.includes('-h')) {
      process.stdout.write(verb.help);
      return 0;
    }
    return verb.run(rest, KIT);
  }
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
      const { values } = parse(rest, {
        name: { type: 'string' },
        'task-id': { type: 'string' },
        ttl: { type: 'string' },
        'print-credentials': { type: 'boolean' },
      });
      const url = resolveUrl(values.url);
      const ra = await ReturnAddress.create({ url, name: values.name, taskId: values['task-id'], ttl: intOption(values.ttl, 'ttl') });
      const created = ra.created!;
      if (!values.save || values['print-credentials']) {
        out(created);
        if (values.save) writeSaved(values.save, { ...created, cursor: 0, url });
        return 0;
      }
      writeSaved(values.save, { ...created, cursor: 0, url });
      process.stderr.write(
        `created ${created.address.email} (${created.address.id}); credentials saved to ${values.save} (mode 0600)\n` +
          `hook_url and inbox_url hold the inbox secret: read one with  jq -r .endpoints.hook_url ${values.save}\n`,
      );
      // The address and where its credentials are, never the credentials themselves.
      // (inbox_url and hook_url hold the inbox secret.)
      const { events_url, mcp_url } = created.endpoints;
      out({ address: created.address, endpoints: { events_url, mcp_url }, saved_to: values.save });
      return 0;
    }
    case 'wait': {
      const { values } = parse(rest, {
        type: { type: 'string' },
        match: { type: 'string', multiple: true },
        timeout: { type: 'string' },
        ack: { type: 'boolean' },
      });
      const saved = loadSaved(values.save);
      const match = parseMatchOption(values.match ?? []);
      const ra = ReturnAddress.fromCreated(saved, { url: savedUrl(values.url, saved) });
      const filtered = values.type !== undefined || Object.keys(match).length > 0;
      // After a restore (a new epoch) from the start, past the ids consume handled (saved-epoch.ts).
      const { epoch, restored } = await readSaved(saved, 'wait', (from) => ra.page({ after: from, limit: 1 }));
      const handled = new Set(restored ? (saved.handled ?? []) : []);
      const stop = spinner(`waiting for ${values.type ?? 'an event'} on ${saved.address.email}`);
      let result: WaitResult;
      try {
        const timeout = intOption(values.timeout, 'timeout') ?? 300;
        const deadline = Date.now() + timeout * 1000;
        const wait = (after: number) =>
          ra.waitFor({
            after,
            ...(values.type !== undefined ? { type: values.type } : {}),
            ...(filtered && Object.keys(match).length > 0 ? { match } : {}),
            // --ack takes only what is not acknowledged yet: a loop of `wait --ack` gets each event
            // once, also a filtered one, which leaves the saved cursor where it was.
            ...(values.ack ? { state: 'unacked' as const } : {}),
            timeout: Math.max(0, (deadline - Date.now()) / 1000),
          });
        result = await wait(restored ? 0 : saved.cursor);
        while (result.event && handled.has(result.event.id)) result = await wait(result.cursor);
      } finally {
        stop();
      }
      if (!result.event) {
        process.stderr.write(`timed out: no matching event after cursor ${saved.cursor}\n`);
        return 2;
      }
      if (values.ack) {
        result.event = await ra.ack(result.event.id);
        // A filtered wait passed over other events: the saved cursor stays before them.
        if (values.save && !filtered) writeSaved(values.save, { ...saved, cursor: result.cursor, ...(epoch !== undefined ? { epoch } : {}) });
      }
      out(result.event);
      return 0;
    }
    case 'events': {
      const { values } = parse(rest, {
        after: { type: 'string' },
        limit: { type: 'string' },
        wait: { type: 'string' },
        type: { type: 'string', multiple: true },
        match: { type: 'string', multiple: true },
        advance: { type: 'boolean' },
      });
      const saved = loadSaved(values.save);
      const ra = ReturnAddress.fromCreated(saved, { url: savedUrl(values.url, saved) });
      const match = parseMatchOption(values.match ?? []);
      const after = intOption(values.after, 'after');
      const read = (from: number) =>
        ra.page({
          after: from,
          limit: intOption(values.limit, 'limit'),
          wait: intOption(values.wait, 'wait'),
          ...(values.type?.length ? { type: values.type } : {}),
          ...(Object.keys(match).length > 0 ? { match } : {}),
        });
      // From the saved cursor, or from the start when the store was restored since (saved-epoch.ts).
      const { page, epoch } = after === undefined ? await readSaved(saved, 'events', read) : { page: await read(after), epoch: saved.epoch };
      // Only once the caller says the page is handled: a crash before that reads it again.
      if (values.advance) writeSaved(values.save!, { ...saved, cursor: page.next_cursor, ...(epoch !== undefined ? { epoch } : {}) });
      out(page);
      return 0;
    }
    case 'consume': {
      const { values } = parse(rest, {
        exec: { type: 'string' },
        type: { type: 'string', multiple: true },
        match: { type: 'string', multiple: true },
        consumer: { type: 'string' },
        'until-idle': { type: 'string' },
        claim: { type: 'boolean' },
        lease: { type: 'string' },
        'max-deliveries': { type: 'string' },
      });
      return consume(values, (message) => new UsageError(message));
    }
    case 'get': {
      const { values } = parse(rest, {});
      const ra = fromSaved(values.save, values.url);
      out({ address: await ra.get() });
      return 0;
    }
    case 'ack': {
      const { values, positionals } = parse(rest, {}, true);
      if (positionals.length !== 1) throw new UsageError('ack takes exactly one EVENT_ID');
      const ra = fromSaved(values.save, values.url);
      out({ event: await ra.ack(positionals[0]!) });
      return 0;
    }
    case 'deliver': {
      const { values } = parse(rest, { type: { type: 'string' }, source: { type: 'string' }, data: { type: 'string' }, key: { type: 'string' } });
      const ra = fromSaved(values.save, values.url);
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
      return ask(rest, KIT);
    case 'delete': {
      const { values } = parse(rest, {});
      const saved = loadSaved(values.save);
      await ReturnAddress.fromCreated(saved, { url: savedUrl(values.url, saved) }).delete();
      process.stderr.write(`deleted ${saved.address.id}; ${values.save} now holds a dead token\n`);
      out({ deleted: saved.address.id });
      return 0;
    }
  }
  return 1;
}

function fromSaved(file: string | undefined, url: string | undefined): ReturnAddress {
  const saved = loadSaved(file);
  return ReturnAddress.fromCreated(saved, { url: savedUrl(url, saved) });
}

const KIT: VerbKit = {
  parse: ((args: string[], options: NonNullable<ParseArgsConfig['options']>, positionals?: boolean) => parse(args, options, positionals)) as VerbKit['parse'],
  loadSaved,
  out,
  usage: (message) => new UsageError(message),
};

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
