// Large captured JSON bodies are checked in a worker thread (design.md, "Bounded work"): parsing a
// 25 MiB body of 1.5 M keys takes seconds of synchronous work that no timer can interrupt, and on
// the event loop it held every other request (/healthz 5.9-10 s). One worker, started by the first
// large body and ended after a minute idle, takes them one at a time; each has a wall-clock budget,
// past which the worker is ended (the only way to stop synchronous work) and the body is stored as
// broken JSON is (data.body null, its bytes in raw). Bodies up to LARGE_JSON_CHARS are checked on
// the event loop: a worker's round trip would cost them more than the check.
import { Worker } from 'node:worker_threads';
import { type CheckedJson, checkJsonText } from './json-body.js';

/** JSON texts longer than this are checked in the worker. */
export const LARGE_JSON_CHARS = 512 * 1024;
/** How long one body may take in the worker, waiting for it included. */
export const JSON_CHECK_BUDGET_MS = 10_000;
const IDLE_WORKER_MS = 60_000;

interface Job {
  id: number;
  text: string;
  resolve: (checked: CheckedJson | null) => void;
  timer: NodeJS.Timeout;
}

class JsonBodyPool {
  private worker: Worker | null = null;
  private readonly queue: Job[] = [];
  private running: Job | null = null;
  private nextId = 0;
  private idleTimer: NodeJS.Timeout | null = null;

  check(text: string): Promise<CheckedJson | null> {
    return new Promise((resolve) => {
      const job: Job = { id: this.nextId++, text, resolve, timer: setTimeout(() => this.overBudget(job), JSON_CHECK_BUDGET_MS) };
      job.timer.unref();
      this.queue.push(job);
      this.next();
    });
  }

  private next(): void {
    if (this.running !== null) return;
    const job = this.queue.shift();
    if (job === undefined) {
      // An idle worker keeps no process alive (its 'message' listener refs it); a working one does,
      // so the body it checks is answered.
      this.worker?.unref();
      if (this.worker !== null && this.idleTimer === null) {
        this.idleTimer = setTimeout(() => this.endWorker(), IDLE_WORKER_MS);
        this.idleTimer.unref();
      }
      return;
    }
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    this.running = job;
    const worker = this.ensureWorker();
    worker.ref();
    worker.postMessage({ id: job.id, text: job.text });
  }

  private ensureWorker(): Worker {
    if (this.worker !== null) return this.worker;
    const worker = new Worker(new URL('./json-body-worker.js', import.meta.url));
    worker.on('message', (m: { id: number; checked: CheckedJson | null }) => {
      const job = this.running;
      if (job === null || job.id !== m.id) return;
      this.settle(job, m.checked);
    });
    // A worker that dies (out of memory, say) fails its body as broken JSON; the next body starts another.
    const gone = () => {
      if (this.worker !== worker) return;
      this.worker = null;
      if (this.running !== null) this.settle(this.running, null);
    };
    worker.on('error', gone);
    worker.on('exit', gone);
    this.worker = worker;
    return worker;
  }

  private settle(job: Job, checked: CheckedJson | null): void {
    clearTimeout(job.timer);
    if (this.running === job) this.running = null;
    job.resolve(checked);
    this.next();
  }

  private overBudget(job: Job): void {
    const queued = this.queue.indexOf(job);
    if (queued >= 0) {
      this.queue.splice(queued, 1);
      return job.resolve(null);
    }
    if (this.running !== job) return;
    this.endWorker();
    this.settle(job, null);
  }

  private endWorker(): void {
    const worker = this.worker;
    this.worker = null;
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    void worker?.terminate();
  }
}

const pool = new JsonBodyPool();

/** checkJsonText, in the worker for a large body. */
export function checkJsonBody(text: string): Promise<CheckedJson | null> | CheckedJson | null {
  return text.length > LARGE_JSON_CHARS ? pool.check(text) : checkJsonText(text);
}
