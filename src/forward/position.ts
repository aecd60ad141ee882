// Where one forward target's position lives (design.md, "Forwarding to a local handler"): in the service, as the named consumer
// `forward:<target>` (§14: a read without `after` starts after the stored position, a read with
// `after=N` stores N first). A service without named consumers answers 400 naming `consumer`; then
// the position is kept in a local file instead (write, then rename: a crash never leaves half a
// file), so a restart still resumes. Either way the position moves only after the handler's 2xx.
// The file also keeps, per target, the store epoch of its position and the last HANDLED_IN_FILE event
// ids sent (under "epochs" and "handled"), so a forwarder started after a restore reads again from the
// start and skips them (design.md, "Store epoch"); the service's consumers are restored with it.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { type EventPage, type ReturnAddress, ReturnAddressError } from '@return-address/client';

export const PAGE_LIMIT = 100;
/** How many sent event ids the local file keeps per target (it is rewritten at each commit). */
export const HANDLED_IN_FILE = 1_000;

export interface PositionStore {
  /** 'server': the service's named consumer; 'local': the file; 'memory': neither (no file given). */
  readonly kind: 'server' | 'local' | 'memory';
  /** A page after the stored position (`after` undefined) or after `after`, which is stored first. */
  page(after: number | undefined, wait: number, signal: AbortSignal): Promise<EventPage>;
  /** Stores `sequence` as the position: every event up to it has been handled. */
  commit(sequence: number, signal: AbortSignal): Promise<void>;
  /** The store epoch the position belongs to: the local file's, or undefined until a page says it. Saved with the next commit. */
  epoch: string | undefined;
  /** Event ids sent before this run (the local file's last HANDLED_IN_FILE; none for the others). */
  readonly handled: readonly string[];
  /** Remembers a sent event id (saved with the next commit, in the local file). */
  remember(eventId: string): void;
}

/** Whether `err` is the service refusing the `consumer` parameter it does not know. */
const noConsumers = (err: unknown) => err instanceof ReturnAddressError && err.status === 400 && /consumer/.test(err.message);

class ServerPosition implements PositionStore {
  readonly kind = 'server';
  epoch: string | undefined;
  readonly handled: readonly string[] = [];
  remember(): void {}
  constructor(
    private readonly ra: ReturnAddress,
    private readonly name: string,
  ) {}
  page(after: number | undefined, wait: number, signal: AbortSignal): Promise<EventPage> {
    return this.ra.page({ consumer: this.name, after, limit: PAGE_LIMIT, wait, signal });
  }
  async commit(sequence: number, signal: AbortSignal): Promise<void> {
    // Storing a position is a read with after=N (§14); one event is the least it can return.
    await this.ra.page({ consumer: this.name, after: sequence, limit: 1, wait: 0, signal });
  }
}

/** The local file: each target's position by name, and beside them the epochs and sent ids by name. */
type StoredPositions = { [name: string]: unknown } & { epochs?: Record<string, string>; handled?: Record<string, string[]> };

class LocalPosition implements PositionStore {
  readonly kind: 'local' | 'memory';
  private position: number;
  epoch: string | undefined;
  handled: string[];
  constructor(
    private readonly ra: ReturnAddress,
    private readonly name: string,
    private readonly file: string | undefined,
  ) {
    this.kind = file === undefined ? 'memory' : 'local';
    const stored = this.stored();
    this.position = typeof stored[name] === 'number' ? stored[name] : 0;
    this.epoch = stored.epochs?.[name];
    this.handled = [...(stored.handled?.[name] ?? [])];
  }
  remember(eventId: string): void {
    this.handled.push(eventId);
    if (this.handled.length > HANDLED_IN_FILE) this.handled.splice(0, this.handled.length - HANDLED_IN_FILE);
  }
  private stored(): StoredPositions {
    if (this.file === undefined) return {};
    try {
      return JSON.parse(readFileSync(this.file, 'utf8')) as StoredPositions;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw new Error(`cannot read the forward positions in ${this.file}: ${(err as Error).message}`);
    }
  }
  async page(after: number | undefined, wait: number, signal: AbortSignal): Promise<EventPage> {
    if (after !== undefined && after !== this.position) await this.commit(after, signal);
    return this.ra.page({ after: this.position, limit: PAGE_LIMIT, wait, signal });
  }
  async commit(sequence: number, _signal?: AbortSignal): Promise<void> {
    this.position = sequence;
    if (this.file === undefined) return;
    // Several targets share the file: re-read it so each writes only its own name.
    const stored = this.stored();
    const all: StoredPositions = {
      ...stored,
      [this.name]: sequence,
      ...(this.epoch !== undefined ? { epochs: { ...stored.epochs, [this.name]: this.epoch } } : {}),
      handled: { ...stored.handled, [this.name]: this.handled },
    };
    const tmp = `${this.file}.${process.pid}.${this.name.replace(/[^a-z0-9]/g, '_')}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(all, null, 2)}\n`, { mode: 0o600 });
    renameSync(tmp, this.file);
  }
}

/**
 * The position of consumer `name`: the service's named consumer when it has them, else `file` (or
 * memory). The first page decides, so it is read here: it is returned with the store.
 */
export async function openPosition(
  ra: ReturnAddress,
  name: string,
  file: string | undefined,
  after: number | undefined,
  signal: AbortSignal,
  onFallback: (why: string) => void,
): Promise<{ store: PositionStore; first: EventPage }> {
  const server = new ServerPosition(ra, name);
  try {
    return { store: server, first: await server.page(after, 0, signal) };
  } catch (err) {
    if (!noConsumers(err)) throw err;
    const local = new LocalPosition(ra, name, file);
    onFallback(
      `this service keeps no named consumers (${(err as Error).message}); ${name}'s position is kept ${file === undefined ? 'in memory only' : `in ${file}`}`,
    );
    return { store: local, first: await local.page(after, 0, signal) };
  }
}
