// `return-address forward` (design.md, "Forwarding to a local handler"): replays the saved address's queue into local handlers
// until Ctrl-C, one status line per attempt on stderr. Options before the first --to apply to every
// target; --type and --match after a --to apply to that target only.
import { parseArgs } from 'node:util';
import { type EventMatch, parseMatch, ReturnAddress } from '@return-address/client';
import { type ForwardAttempt, type ForwardTarget, forward } from '../forward/forwarder.js';
import { parseResign } from '../forward/resign.js';
import { savedUrl } from './saved-file.js';
import type { CliVerb } from './verb.js';

const OPTIONS = {
  url: { type: 'string' },
  save: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  to: { type: 'string', multiple: true },
  type: { type: 'string', multiple: true },
  match: { type: 'string', multiple: true },
  'from-sequence': { type: 'string' },
  resign: { type: 'string' },
  'resign-unverified': { type: 'boolean' },
  ack: { type: 'boolean' },
  positions: { type: 'string' },
  'attempt-timeout': { type: 'string' },
} as const;

/** One status line: status, method, path, type, sequence, milliseconds, target. */
export function statusLine(a: ForwardAttempt): string {
  if (a.skipped !== undefined) return `forward SKIP ${a.type} seq=${a.sequence} -> ${a.target}: ${a.skipped}`;
  const status = a.status === null ? `ERR ${a.error ?? ''}`.trim() : String(a.status);
  const retry = a.retryInMs === undefined ? '' : `; retry in ${a.retryInMs / 1000}s`;
  return `forward ${status} ${a.method} ${a.path} ${a.type} seq=${a.sequence} ${a.ms}ms -> ${a.target}${retry}`;
}

export const forwardVerb: CliVerb = {
  summary: 'replay the queue into local handlers (resumable, in order, retried)',
  help: `Usage: return-address forward --save FILE --to URL [--type T]... [--match path=value]...
       [--to URL [--type T] [--match path=value]]... [--from-sequence N]
       [--resign github|stripe|slack|standard_webhooks:SECRET [--resign-unverified]] [--ack]

Replays the address's events into local handlers, like \`stripe listen --forward-to\` but
resumable: each --to keeps its own position in the service (the named consumer
forward:<host:port/path>), so after a restart, a crash or a laptop's sleep it resumes where it
stopped and delivers the events that arrived meanwhile, in order.
  A request the capture URL (hook_url) stored is replayed as it came: its method, its sub-path and
  query after the --to URL, its headers (without hop-by-hop ones and Host) and its exact bytes, so
  the handler's own signature check holds. Any other event is POSTed as its Event JSON
  (x-return-address-event-id, -event-type and -sequence headers).
  A 2xx moves that target's position (and acknowledges the event with --ack); anything else, or no
  answer within --attempt-timeout seconds (30), is retried 1 s doubling to 60 s, and nothing after
  that event goes to that target meanwhile.
  --type T, --match path=value   before the first --to: for every target; after a --to: for that
                                 target only. T is exact or a prefix ending in .* (github.*).
  --from-sequence N   replay from sequence N (each target's position is set to N-1 first)
  --resign SCHEME:SECRET   sign each request again, now, with a local secret, as the provider would
                      (github, stripe, slack, standard_webhooks), so a handler accepts events older
                      than the provider's 300 s tolerance. Only events the service verified
                      (trust.verified true, or a capture whose signature matched and only its
                      timestamp was stale) are signed: any other is skipped for that target, with
                      a line "forward SKIP TYPE seq=N -> TARGET: why", and its position moves on
  --resign-unverified sign and send unverified events too (forgeries included): only for a handler
                      that does not act on the signature alone
  --ack               acknowledge each event after a target answered 2xx
  --positions FILE    where positions are kept if the service has no named consumers
                      (default: FILE.forward.json beside --save)
One line per attempt on stderr: forward STATUS METHOD PATH TYPE seq=N MSms -> TARGET. Ctrl-C stops
cleanly: an attempt under way is abandoned and sent again next time; nothing is lost.

  --save FILE    the file \`create --save\` wrote
  --url URL      service base URL (default: the one saved in FILE, else $RETURN_ADDRESS_URL, else http://localhost:3000)
`,
  async run(args, kit) {
    let parsed: ReturnType<typeof parseArgs<{ args: string[]; options: typeof OPTIONS; tokens: true; strict: true }>>;
    try {
      parsed = parseArgs({ args, options: OPTIONS, tokens: true, strict: true });
    } catch (err) {
      throw kit.usage((err as Error).message);
    }
    const { values, tokens } = parsed;
    // Walk the options in order: --type/--match before any --to are shared, after one belong to it.
    const shared: { types: string[]; match: string[] } = { types: [], match: [] };
    const targets: { url: string; types: string[]; match: string[] }[] = [];
    for (const t of tokens) {
      if (t.kind !== 'option' || t.value === undefined) continue;
      const current = targets.at(-1) ?? shared;
      if (t.name === 'to') targets.push({ url: t.value, types: [...shared.types], match: [...shared.match] });
      else if (t.name === 'type') current.types.push(t.value);
      else if (t.name === 'match') current.match.push(t.value);
    }
    if (targets.length === 0) throw kit.usage('give at least one --to URL (the local handler, e.g. --to http://localhost:4000/webhooks)');
    const forwardTargets: ForwardTarget[] = [];
    for (const t of targets) {
      let match: EventMatch;
      try {
        match = parseMatch(t.match);
      } catch (err) {
        throw kit.usage((err as Error).message);
      }
      forwardTargets.push({ url: t.url, types: t.types, match });
    }
    let fromSequence: number | undefined;
    if (values['from-sequence'] !== undefined) {
      fromSequence = Number(values['from-sequence']);
      if (!Number.isSafeInteger(fromSequence) || fromSequence < 1) throw kit.usage(`--from-sequence must be an integer ≥ 1, got "${values['from-sequence']}"`);
    }
    let attemptTimeoutMs: number | undefined;
    if (values['attempt-timeout'] !== undefined) {
      const s = Number(values['attempt-timeout']);
      if (!Number.isFinite(s) || s <= 0) throw kit.usage(`--attempt-timeout must be a number of seconds > 0, got "${values['attempt-timeout']}"`);
      attemptTimeoutMs = s * 1000;
    }
    let resign: ReturnType<typeof parseResign> | undefined;
    try {
      resign = values.resign === undefined ? undefined : parseResign(values.resign);
    } catch (err) {
      throw kit.usage((err as Error).message);
    }
    const saved = kit.loadSaved(values.save);
    const ra = ReturnAddress.fromCreated(saved, { url: savedUrl(values.url, saved) });
    const stop = new AbortController();
    let stops = 0;
    const onSignal = (sig: NodeJS.Signals) => {
      if (++stops > 1) process.exit(130); // a second Ctrl-C: the person wants out now
      process.stderr.write(`forward: ${sig}: stopping; positions are kept, nothing is lost\n`);
      stop.abort();
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    for (const t of forwardTargets)
      process.stderr.write(
        `forward: ${saved.address.id} -> ${t.url}${t.types?.length ? ` type ${t.types.join(',')}` : ''}${Object.keys(t.match ?? {}).length ? ` match ${JSON.stringify(t.match)}` : ''}\n`,
      );
    try {
      await forward(ra, {
        targets: forwardTargets,
        fromSequence,
        resign,
        resignUnverified: values['resign-unverified'] === true,
        ack: values.ack === true,
        signal: stop.signal,
        attemptTimeoutMs,
        positionFile: values.positions ?? `${values.save}.forward.json`,
        onAttempt: (a) => process.stderr.write(`${statusLine(a)}\n`),
        onNotice: (m) => process.stderr.write(`forward: ${m}\n`),
      });
    } catch (err) {
      if (err instanceof TypeError) throw kit.usage(err.message);
      throw err;
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
    process.stderr.write('forward: stopped\n');
    return 0;
  },
};
