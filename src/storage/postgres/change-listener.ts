// The one LISTEN connection of an instance: turns NOTIFYs from any instance into wake-ups here.
//
// States: connecting -> listening -> (connection lost) -> waiting (backoff timer) -> connecting
// -> …; any state -> closed. Exactly one pg.Client is current at a time (`this.client`); events
// of a client that is no longer current are ignored, so a late 'error' or 'end' of a dropped
// connection can never tear down its successor.
//
// Notifications sent while no connection listens are lost, so every successful LISTEN (the first
// one and each after a reconnect) calls `onListening`, and the caller wakes all its waiters,
// which re-read the database: a wake-up is a hint, the database is the truth.
// A connection that silently died (half-open TCP) is found by keepalive and by a periodic
// `SELECT 1` with a timeout; either way it counts as lost and is replaced.
import pg from 'pg';
import { type Log, SILENT_LOG } from '../../domain/ports.js';

export type ListenerState = 'connecting' | 'listening' | 'waiting' | 'closed';

export interface ChangeListenerOptions {
  clientConfig: pg.ClientConfig;
  channel: string;
  onNotification(payload: string): void;
  /** After every successful LISTEN: changes made while not listening may have been missed. */
  onListening(): void;
  /** First reconnect delay; doubles per failed attempt up to `retryMaxMs` (with jitter). */
  retryMinMs?: number;
  retryMaxMs?: number;
  /** How often a listening connection is probed with `SELECT 1`. */
  healthCheckMs?: number;
  /** Each loss and each recovery is logged once (not every failed attempt in between). */
  log?: Log;
}

export class ChangeListener {
  private state: ListenerState = 'connecting';
  private client: pg.Client | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private healthTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  private listens = 0;
  private losses = 0;
  private downSince: number | undefined;
  private readonly retryMinMs: number;
  private readonly retryMaxMs: number;
  private readonly healthCheckMs: number;
  private readonly log: Log;

  constructor(private readonly opts: ChangeListenerOptions) {
    this.retryMinMs = opts.retryMinMs ?? 250;
    this.retryMaxMs = opts.retryMaxMs ?? 10_000;
    this.healthCheckMs = opts.healthCheckMs ?? 15_000;
    this.log = opts.log ?? SILENT_LOG;
  }

  /** Connects and listens; rejects (and stays closed) if the first attempt fails. */
  async start(): Promise<void> {
    try {
      await this.connect();
    } catch (err) {
      await this.close();
      throw new Error('could not LISTEN for address changes', { cause: err });
    }
  }

  /** For readiness and tests: the current state, how many LISTENs succeeded, since when it is deaf. */
  status(): { state: ListenerState; listens: number; downSince: number | undefined } {
    return { state: this.state, listens: this.listens, downSince: this.downSince };
  }

  /**
   * When waiting out a backoff, one attempt now (the caller just reached the database: readiness),
   * resolved once it has listened or failed; otherwise nothing. A failure reschedules as usual.
   */
  async reconnectNow(): Promise<void> {
    if (this.state !== 'waiting') return;
    clearTimeout(this.retryTimer);
    await this.connect().catch(() => {});
  }

  async close(): Promise<void> {
    this.state = 'closed';
    clearTimeout(this.retryTimer);
    clearInterval(this.healthTimer);
    const client = this.client;
    this.client = undefined;
    if (client) await client.end().catch(() => {});
  }

  /** One attempt; on failure the connection counts as lost (and a retry is scheduled). */
  private async connect(): Promise<void> {
    const client = new pg.Client(this.opts.clientConfig);
    this.client = client;
    this.state = 'connecting';
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    client.on('notification', (n) => {
      if (this.client === client && n.channel === this.opts.channel && n.payload) this.opts.onNotification(n.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${pg.escapeIdentifier(this.opts.channel)}`);
    } catch (err) {
      this.lost(client, err);
      throw err;
    }
    if (this.client !== client) return; // lost or closed meanwhile
    if (this.downSince !== undefined) {
      this.log.info(
        { downMs: Date.now() - this.downSince, attempts: this.failures, losses: this.losses },
        'LISTEN connection back; waking every waiter to re-read what may have been missed',
      );
    }
    this.state = 'listening';
    this.failures = 0;
    this.downSince = undefined;
    this.listens++;
    this.healthTimer = setInterval(() => this.probe(client), this.healthCheckMs);
    this.healthTimer.unref();
    this.opts.onListening();
  }

  private probe(client: pg.Client): void {
    if (this.client !== client) return;
    // query_timeout (client config) bounds the wait on a half-open connection.
    client.query('SELECT 1').catch((err: unknown) => this.lost(client, err));
  }

  private lost(client: pg.Client, err?: unknown): void {
    if (this.client !== client) return;
    if (this.state === 'listening') {
      this.losses++;
      this.log.warn({ err, losses: this.losses }, 'LISTEN connection lost; cross-instance wake-ups wait for the reconnect');
    } else if (this.state !== 'closed') {
      this.log.debug({ err, attempt: this.failures + 1 }, 'LISTEN reconnect attempt failed');
    }
    this.client = undefined;
    clearInterval(this.healthTimer);
    // Make sure the socket is gone; its late events are ignored (not current any more).
    client.end().catch(() => {});
    if (this.state === 'closed') return;
    this.state = 'waiting';
    this.downSince ??= Date.now();
    const base = Math.min(this.retryMaxMs, this.retryMinMs * 2 ** this.failures);
    this.failures++;
    const delay = base * (1 + Math.random() * 0.25);
    this.retryTimer = setTimeout(() => {
      if (this.state === 'waiting') this.connect().catch(() => {}); // a failure reschedules itself
    }, delay);
    this.retryTimer.unref();
  }
}
