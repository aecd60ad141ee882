// A worker thread of the mail-parsing pool (mail-parse-pool.ts): untrusted mail is parsed, its
// sender authenticated and its content extracted here, never on the event loop that answers HTTP
// and SMTP. The pool ends this thread when it passes its heap limit or its wall-clock budget.
// DNS questions go to the main thread, which owns the resolver (tests inject one there).
import { parentPort } from 'node:worker_threads';
import { withoutRawBytes } from './email-blobs.js';
import type { FromWorker, MailTaskResult, ToWorker } from './mail-parse-protocol.js';
import { parseEmail } from './mime-to-event.js';
import { authenticateSender } from './sender-authentication.js';

const port = parentPort;
if (!port) throw new Error('mail-parse-worker.ts runs as a worker thread only');

const send = (message: FromWorker) => port.postMessage(message);
let nextQuery = 0;
const pendingDns = new Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void }>();

function resolveOnMainThread(name: string, rrtype: string): Promise<unknown> {
  const query = nextQuery++;
  return new Promise((resolve, reject) => {
    pendingDns.set(query, { resolve, reject });
    send({ type: 'dns', query, name, rrtype });
  });
}

async function run(message: Extract<ToWorker, { type: 'task' }>): Promise<MailTaskResult> {
  const raw = Buffer.from(message.raw.buffer, message.raw.byteOffset, message.raw.byteLength);
  const { task } = message;
  if (task.kind === 'parse') return { kind: 'parse', parsed: withoutRawBytes(await parseEmail(raw, task.limits)) };
  let error: string | null = null;
  const proof = await authenticateSender(raw, task.facts, {
    resolver: resolveOnMainThread,
    lookupTimeoutMs: task.lookupTimeoutMs,
    budgetMs: task.budgetMs,
    onError: (err) => {
      error = err instanceof Error ? err.message : String(err);
    },
  });
  return { kind: 'authenticate', proof, error };
}

port.on('message', (message: ToWorker) => {
  if (message.type === 'dns-answer') {
    const pending = pendingDns.get(message.query);
    if (!pending) return;
    pendingDns.delete(message.query);
    if (message.ok) pending.resolve(message.value);
    else pending.reject(Object.assign(new Error(message.message), { code: message.code }));
    return;
  }
  run(message).then(
    (result) => send({ type: 'done', id: message.id, result }),
    (err: unknown) => send({ type: 'failed', id: message.id, message: err instanceof Error ? err.message : String(err) }),
  );
});
