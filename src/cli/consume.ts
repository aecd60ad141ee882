// `return-address consume --exec CMD [--type T] [--match path=value]... [--consumer NAME]`
// (design.md, "Reading without loss"): at-least-once delivery of the queue to a command. Each event, in sequence order,
// is given to CMD (run by the shell) as JSON on stdin, with RA_EVENT_ID, RA_EVENT_TYPE and
// RA_SEQUENCE in its environment. Exit 0 acknowledges the event and commits the position (the saved
// file's cursor, or the named consumer's on the service); any other exit retries the same event with
// backoff (1 s doubling to 60 s), so nothing is skipped and the order holds. A crash or kill
// re-runs at most the event that was not committed yet: CMD should dedupe by RA_EVENT_ID.
//
// CMD runs in a process group of its own, and SIGTERM or SIGINT to the CLI ends that whole group
// (SIGTERM, then SIGKILL after HANDLER_GRACE_MS) before the CLI exits, so a stopped worker leaves no
// handler, nor a handler's own children, running. SIGKILL cannot be caught: after `kill -9` of the
// CLI the handler runs on until it ends by itself; its process group id is its pid, printed when it starts.
import { type ChildProcess, spawn } from 'node:child_process';
import { MAX_WAIT_SECONDS, parseMatch, ReturnAddress } from '@return-address/client';
import { UNTRUSTED_CONTENT } from '../domain/trust.js';
import { epochChangedLine, SAVED_HANDLED_IDS, withHandled } from './saved-epoch.js';
import { loadSaved, type Saved, savedUrl, writeSaved } from './saved-file.js';

/** How long a handler has to end after SIGTERM, once the CLI is told to stop, before SIGKILL. */
const HANDLER_GRACE_MS = 5_000;

export const CONSUME_HELP = `Usage: return-address consume --save FILE --exec CMD [--type T]... [--match path=value]... [--consumer NAME] [--until-idle S]

Runs CMD (through the shell) once per event after the saved cursor, in sequence order: the event's
JSON on stdin, RA_EVENT_ID, RA_EVENT_TYPE and RA_SEQUENCE in its environment. Exit 0 acknowledges
the event and saves the cursor past it; any other exit runs CMD again for the same event after
1 s, 2 s, 4 s ... (at most 60 s), so no event is skipped and the order holds. After a crash or a
kill, the event being handled is handed to CMD again: dedupe by RA_EVENT_ID.
FILE keeps the store's epoch with the cursor and the last ${SAVED_HANDLED_IDS} event ids handled: when the
service was restored from a backup (a new epoch), consume says so in one line and reads again from
the start, skipping those ids.
--type (exact, or a prefix like stripe.*) and --match select events on the service; the cursor
still moves past the others. --consumer NAME keeps the position on the service (a named consumer)
instead of in FILE. --until-idle S (a whole number of seconds, 0 to ${MAX_WAIT_SECONDS}) exits 0 once S
seconds pass with no (matching) event; without it, consume runs until interrupted. One line per
attempt on stderr.
--claim shares the address with other workers instead (claims, POST …/claims): each event goes
to one worker at a time under a lease (--lease S, default 60; extended while CMD runs); exit 0
acks the claim, any other exit nacks it (claimable again after 1 s, 2 s, 4 s ... at most 60 s),
and after --max-deliveries N (default 5) deliveries without an ack the event becomes dead. Order
across workers is not kept; the saved cursor is not used.
For a provider event or a mail, add --match trust.verified=true: only trust is written by the
service. ${UNTRUSTED_CONTENT}
CMD runs in a process group of its own: SIGTERM or SIGINT (Ctrl-C) to consume ends that group
(SIGTERM, then SIGKILL after ${HANDLER_GRACE_MS / 1000} s) and then consume exits 0; the event is not acknowledged, so
it is handed over again next time. kill -9 of consume cannot be caught: its handler runs on until it
ends by itself (kill it by its process group, the pid on its "started" line: kill -- -PID).
Exit codes: 0 done (idle, or stopped by a signal), 1 an error (bad usage, the service refusing).
`;

export async function consume(
  values: {
    save?: string;
    url?: string;
    exec?: string;
    type?: string[];
    match?: string[];
    consumer?: string;
    'until-idle'?: string;
    claim?: boolean;
    lease?: string;
    'max-deliveries'?: string;
  },
  usage: (message: string) => Error,
): Promise<number> {
  if (!values.exec) throw usage('--exec CMD is required');
  const saved = loadSaved(values.save);
  let match: ReturnType<typeof parseMatch>;
  try {
    match = parseMatch(values.match ?? []);
  } catch (err) {
    throw usage((err as Error).message);
  }
  const idle = values['until-idle'] === undefined ? undefined : Number(values['until-idle']);
  if (idle !== undefined && !(Number.isInteger(idle) && idle >= 0 && idle <= MAX_WAIT_SECONDS)) {
    throw usage(`--until-idle must be a whole number of seconds from 0 to ${MAX_WAIT_SECONDS}`);
  }
  const ra = ReturnAddress.fromCreated(saved, { url: savedUrl(values.url, saved) });
  const stop = new AbortController();
  const handlers = new Set<ChildProcess>();
  const onSignal = () => {
    stop.abort();
    for (const child of handlers) endGroup(child);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    if (values.claim) {
      if (values.consumer !== undefined) throw usage('--claim and --consumer do not go together: claims keep no position');
      const lease = values.lease === undefined ? 60 : Number(values.lease);
      const maxDeliveries = values['max-deliveries'] === undefined ? 5 : Number(values['max-deliveries']);
      if (!(Number.isInteger(lease) && lease >= 5 && lease <= 3600)) throw usage('--lease must be a whole number of seconds from 5 to 3600');
      if (!(Number.isInteger(maxDeliveries) && maxDeliveries >= 1 && maxDeliveries <= 100))
        throw usage('--max-deliveries must be a whole number from 1 to 100');
      await ra.consumeClaims((event) => runCommand(values.exec!, event, handlers, stop.signal), {
        ...(values.type?.length ? { type: values.type } : {}),
        ...(Object.keys(match).length > 0 ? { match } : {}),
        ...(idle !== undefined ? { idleSeconds: idle } : {}),
        leaseSeconds: lease,
        maxDeliveries,
        signal: stop.signal,
        onError: (err, c) =>
          process.stderr.write(`consume: sequence ${c.event.sequence} ${c.event.type} delivery ${c.delivery_count}: ${(err as Error).message}\n`),
      });
      return 0;
    }
    // The saved cursor belongs to the saved epoch (saved-epoch.ts): a page of another one makes the
    // client read again from the start (onCommit(0)), and the ids handled before are not run again.
    const named = values.consumer !== undefined;
    if (!named && saved.epoch !== undefined) ra.epoch = saved.epoch;
    let file: Saved = saved;
    let known = saved.epoch;
    let restored = false;
    const handledBefore = new Set(saved.handled ?? []);
    const handler = async (event: Parameters<typeof runCommand>[1]) => {
      if (restored && handledBefore.has(event.id)) return;
      await runCommand(values.exec!, event, handlers, stop.signal);
      if (!named) file = { ...file, handled: withHandled(file.handled, event.id) };
    };
    const commit = (cursor: number) => {
      if (known !== undefined && ra.epoch !== undefined && ra.epoch !== known) {
        process.stderr.write(epochChangedLine('consume', known, ra.epoch));
        restored = true;
      }
      known = ra.epoch ?? known;
      file = { ...file, cursor, ...(known !== undefined ? { epoch: known } : {}) };
      writeSaved(values.save!, file);
    };
    await ra.consume(handler, {
      ...(values.type?.length ? { type: values.type } : {}),
      ...(Object.keys(match).length > 0 ? { match } : {}),
      ...(values.consumer !== undefined ? { consumer: values.consumer } : {}),
      ...(idle !== undefined ? { idleSeconds: idle } : {}),
      signal: stop.signal,
      // The saved file is the position without a named consumer: written after each handled event.
      onCommit: named ? undefined : commit,
      onError: (err, event, attempt) =>
        process.stderr.write(`consume: sequence ${event.sequence} ${event.type}: ${(err as Error).message}; retry ${attempt}\n`),
    });
  } catch (err) {
    if (!stop.signal.aborted) throw err;
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
  return 0;
}

/** SIGTERM to the handler's whole process group, SIGKILL if it is still there after the grace time. */
function endGroup(child: ChildProcess): void {
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, signal);
    } catch {
      // The group is gone already.
    }
  };
  signalGroup('SIGTERM');
  const timer = setTimeout(() => signalGroup('SIGKILL'), HANDLER_GRACE_MS);
  child.once('exit', () => {
    clearTimeout(timer);
    // Children the handler left behind in its group go with it.
    signalGroup('SIGKILL');
  });
}

/** Runs CMD for one event in a process group of its own; resolves when it exits 0, rejects otherwise. */
function runCommand(cmd: string, event: { id: string; type: string; sequence: number }, handlers: Set<ChildProcess>, stop: AbortSignal): Promise<void> {
  const started = Date.now();
  if (stop.aborted) return Promise.reject(new Error('consume is stopping'));
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, {
      shell: true,
      // Its own process group, so the CLI can end the handler with everything it started.
      detached: true,
      stdio: ['pipe', 'inherit', 'inherit'],
      env: { ...process.env, RA_EVENT_ID: event.id, RA_EVENT_TYPE: event.type, RA_SEQUENCE: String(event.sequence) },
    });
    handlers.add(child);
    if (child.pid !== undefined) process.stderr.write(`consume: sequence ${event.sequence} ${event.type} started (process group ${child.pid})\n`);
    child.stdin.on('error', () => {}); // a command that does not read stdin closes it early
    child.stdin.end(`${JSON.stringify(event)}\n`);
    child.once('error', (err) => {
      handlers.delete(child);
      reject(err);
    });
    child.once('exit', (code, signal) => {
      handlers.delete(child);
      const ms = Date.now() - started;
      process.stderr.write(`consume: sequence ${event.sequence} ${event.type} exit ${signal ?? code} (${ms} ms)\n`);
      if (code === 0) resolve();
      else reject(new Error(`the command exited with ${signal ?? code}`));
    });
  });
}
