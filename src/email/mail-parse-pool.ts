// A small pool of worker threads for untrusted mail (docs/design.md, "Untrusted parsing"). MIME parsing,
// sender authentication and extraction cost what a sender makes them cost: postal-mime's work grows
// faster than the bytes for some shapes (a 1.9 MB mail of bare line feeds: 61 s and +2.2 GB), and
// mailauth hashes the body once per signature in synchronous code no timer can interrupt. On the
// event loop, one such mail stalled every HTTP and SMTP client. Here each task runs in a worker with
// a heap limit (MAIL_PARSE_MAX_HEAP_MB) and a wall-clock budget (MAIL_PARSE_TIMEOUT_MS); a worker
// past either is terminated (the only way to stop synchronous work) and replaced by a new one on
// demand, and the task fails with MailParseLimitError, so the caller stores what it knows.
//
// Workers start with the first mail and end after a minute idle: a service that receives no mail
// carries none (each costs ~10-40 MB). A task waits at most its budget for a free worker, then
// fails as `busy` (the SMTP sender is told to retry), so the answer always comes in bounded time.
// What a library prints (mailauth writes non-JSON lines to stdout) is read from the worker's own
// stdout and logged as JSON, never mixed into the service's log stream.

import { promises as dns } from 'node:dns';
import { Worker } from 'node:worker_threads';
import type { FastifyBaseLogger } from 'fastify';
import type { FromWorker, MailTask, MailTaskResult, ToWorker } from './mail-parse-protocol.js';
import type { DnsResolver } from './sender-authentication.js';

export const DEFAULT_MAIL_PARSE_WORKERS = 2;
export const DEFAULT_MAIL_PARSE_TIMEOUT_MS = 10_000;
export const DEFAULT_MAIL_PARSE_MAX_HEAP_MB = 256;
/** A worker with nothing to do for this long is ended. */
const IDLE_WORKER_MS = 60_000;

export type MailParseLimit = 'time' | 'memory' | 'crashed' | 'busy' | 'closed';

export class MailParseLimitError extends Error {
  constructor(
    readonly limit: MailParseLimit,
    message: string,
  ) {
    super(message);
    this.name = 'MailParseLimitError';
  }
}

export interface MailParsePoolOptions {
  workers?: number | undefined;
  timeoutMs?: number | undefined;
  maxHeapMb?: number | undefined;
  /** DNS for the workers' sender authentication; node's dns.promises.resolve by default. */
  dnsResolver?: DnsResolver | undefined;
}

interface Job {
  id: number;
  task: MailTask;
  raw: Uint8Array;
  budgetMs: number;
  resolve: (result: MailTaskResult) => void;
  reject: (err: Error) => void;
  queuedTimer?: NodeJS.Timeout;
}

interface Slot {
  worker: Worker;
  job: Job | null;
  timer: NodeJS.Timeout | null;
  idleTimer: NodeJS.Timeout | null;
  /** Set once the slot's worker is being ended: its events no longer settle anything. */
  gone: boolean;
}

export class MailParsePool {
  readonly size: number;
  readonly timeoutMs: number;
  readonly maxHeapMb: number;
  readonly #resolver: DnsResolver;
  readonly #slots = new Set<Slot>();
  readonly #queue: Job[] = [];
  #nextId = 0;
  #closed = false;
  /** Workers ended for passing a limit, by limit (for tests and the bench). */
  readonly terminations = { time: 0, memory: 0, crashed: 0 };

  constructor(
    opts: MailParsePoolOptions,
    private readonly log: FastifyBaseLogger,
  ) {
    this.size = opts.workers ?? DEFAULT_MAIL_PARSE_WORKERS;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_MAIL_PARSE_TIMEOUT_MS;
    this.maxHeapMb = opts.maxHeapMb ?? DEFAULT_MAIL_PARSE_MAX_HEAP_MB;
    this.#resolver = opts.dnsResolver ?? ((name, rrtype) => dns.resolve(name, rrtype));
  }

  /** Runs one task within `budgetMs` (the pool's timeout by default); rejects with MailParseLimitError past a limit. */
  run(task: MailTask, raw: Uint8Array, budgetMs: number = this.timeoutMs): Promise<MailTaskResult> {
    if (this.#closed) return Promise.reject(new MailParseLimitError('closed', 'the mail parsing pool is closed'));
    return new Promise((resolve, reject) => {
      const job: Job = { id: this.#nextId++, task, raw, budgetMs, resolve, reject };
      const idle = [...this.#slots].find((s) => s.job === null && !s.gone);
      if (idle) return this.#start(idle, job);
      if (this.#slots.size < this.size) return this.#start(this.#spawn(), job);
      job.queuedTimer = setTimeout(() => {
        const at = this.#queue.indexOf(job);
        if (at !== -1) this.#queue.splice(at, 1);
        reject(new MailParseLimitError('busy', `every mail parser stayed busy for ${budgetMs} ms`));
      }, budgetMs);
      this.#queue.push(job);
    });
  }

  /** Ends every worker; queued and running tasks fail with `closed`. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const job of this.#queue.splice(0)) {
      clearTimeout(job.queuedTimer);
      job.reject(new MailParseLimitError('closed', 'the mail parsing pool is closed'));
    }
    await Promise.all([...this.#slots].map((slot) => this.#end(slot, 'closed', 'the mail parsing pool is closed')));
  }

  #spawn(): Slot {
    const worker = new Worker(new URL('./mail-parse-worker.js', import.meta.url), {
      resourceLimits: { maxOldGenerationSizeMb: this.maxHeapMb, maxYoungGenerationSizeMb: Math.min(32, Math.max(4, this.maxHeapMb / 8)), stackSizeMb: 4 },
      stdout: true,
      stderr: true,
    });
    const slot: Slot = { worker, job: null, timer: null, idleTimer: null, gone: false };
    this.#slots.add(slot);
    const logOutput = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() !== '') this.log.debug({ stream, line: line.slice(0, 500) }, 'mail parser library output');
      }
    };
    worker.stdout.on('data', logOutput('stdout'));
    worker.stderr.on('data', logOutput('stderr'));
    worker.on('message', (message: FromWorker) => this.#onMessage(slot, message));
    worker.on('error', (err: Error & { code?: string }) => {
      if (slot.gone) return;
      const memory = err.code === 'ERR_WORKER_OUT_OF_MEMORY';
      void this.#end(
        slot,
        memory ? 'memory' : 'crashed',
        memory ? `the mail parser passed its heap limit of ${this.maxHeapMb} MB` : `the mail parser failed: ${err.message}`,
      );
    });
    worker.on('exit', (code) => {
      if (!slot.gone) void this.#end(slot, 'crashed', `the mail parser exited (code ${code})`);
    });
    return slot;
  }

  #start(slot: Slot, job: Job): void {
    if (slot.idleTimer) clearTimeout(slot.idleTimer);
    slot.idleTimer = null;
    slot.job = job;
    slot.timer = setTimeout(() => {
      void this.#end(slot, 'time', `the mail parser passed its time budget of ${job.budgetMs} ms`);
    }, job.budgetMs);
    const message: ToWorker = { type: 'task', id: job.id, task: job.task, raw: job.raw };
    slot.worker.postMessage(message);
  }

  #onMessage(slot: Slot, message: FromWorker): void {
    if (slot.gone) return;
    if (message.type === 'dns') {
      const answer = (reply: ToWorker) => {
        if (!slot.gone) slot.worker.postMessage(reply);
      };
      let pending: Promise<unknown>;
      try {
        pending = Promise.resolve(this.#resolver(message.name, message.rrtype));
      } catch (err) {
        pending = Promise.reject(err);
      }
      pending.then(
        (value) => answer({ type: 'dns-answer', query: message.query, ok: true, value }),
        (err: unknown) => {
          const e = err as { code?: unknown; message?: unknown } | null;
          answer({
            type: 'dns-answer',
            query: message.query,
            ok: false,
            code: typeof e?.code === 'string' ? e.code : undefined,
            message: String(e?.message ?? err),
          });
        },
      );
      return;
    }
    const job = slot.job;
    if (!job || job.id !== message.id) return;
    if (slot.timer) clearTimeout(slot.timer);
    slot.timer = null;
    slot.job = null;
    if (message.type === 'done') job.resolve(message.result);
    else job.reject(new Error(message.message));
    this.#next(slot);
  }

  /** Gives the slot the next queued job, or lets it idle (and end after IDLE_WORKER_MS). */
  #next(slot: Slot): void {
    const job = this.#queue.shift();
    if (job) {
      clearTimeout(job.queuedTimer);
      this.#start(slot, job);
      return;
    }
    slot.idleTimer = setTimeout(() => void this.#end(slot, 'closed', 'idle'), IDLE_WORKER_MS);
    slot.idleTimer.unref();
  }

  /** Ends a slot's worker; its job (if any) fails with `limit`; a queued job gets a new worker. */
  async #end(slot: Slot, limit: MailParseLimit, message: string): Promise<void> {
    if (slot.gone) return;
    slot.gone = true;
    this.#slots.delete(slot);
    if (slot.timer) clearTimeout(slot.timer);
    if (slot.idleTimer) clearTimeout(slot.idleTimer);
    const job = slot.job;
    slot.job = null;
    if (limit === 'time' || limit === 'memory' || limit === 'crashed') {
      this.terminations[limit]++;
      this.log.warn({ limit, task: job?.task.kind, bytes: job?.raw.byteLength }, 'mail parser ended: %s', message);
    }
    job?.reject(new MailParseLimitError(limit, message));
    // The replacement starts now if work is waiting, else with the next mail.
    if (!this.#closed && this.#queue.length > 0) {
      const next = this.#queue.shift()!;
      clearTimeout(next.queuedTimer);
      this.#start(this.#spawn(), next);
    }
    await slot.worker.terminate();
  }
}
