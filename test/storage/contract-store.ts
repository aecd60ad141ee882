// The store contract's harness: a table of cases run against the store STORE selects (npm test runs
// every file once per store), each file on a fresh SQLite file or a fresh PostgreSQL database. A
// case calls the ports (Store, store.consumers) exactly as the service does, and asserts answers
// that both stores must give alike; where it needs to look under a port (the stored counters, the
// blob rows) it reads the tables with the same SQL on both dialects.
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { newEventId } from '../../src/domain/credentials.js';
import type { AddressRecord, NewEvent } from '../../src/domain/model.js';
import type { StoreLimits } from '../../src/domain/ports.js';
import { INBOX_TRUST_JSON } from '../../src/domain/trust.js';
import { type OpenedStore, openStore, SQLITE_FILE } from '../../src/storage/open-store.js';
import { jsonBytesSql } from '../../src/storage/stored-bytes-sql.js';
import { createTestStorage, type TestStorage } from '../helpers.js';
import { newAddress, RATE } from './store-records.js';

/**
 * Opens a fresh store for the calling file (a SQLite file, or a PostgreSQL database of its own) in
 * before(), hands it to `onOpen`, and closes and drops it in after(): the files that test one port
 * beside the Store share this instead of repeating it.
 */
export function useFreshStore(onOpen: (store: OpenedStore, storage: TestStorage) => void): void {
  let storage: TestStorage | undefined;
  let store: OpenedStore | undefined;
  before(async () => {
    storage = await createTestStorage();
    store = await openStore(loadConfig(storage.env));
    onOpen(store, storage);
  });
  after(async () => {
    await store?.close();
    await storage?.drop();
  });
}

/** Limits that never prune nor refuse. */
export const ROOMY: StoreLimits = { maxEventsPerAddress: 100_000, maxBytesPerAddress: 1 << 30 };

export function newEvent(addressId: string, over: Partial<NewEvent> = {}): NewEvent {
  return {
    id: newEventId(),
    addressId,
    type: 't',
    source: 's',
    data: '{"n":1}',
    metadata: null,
    dedupeKey: null,
    trust: INBOX_TRUST_JSON,
    createdAt: Date.now(),
    ...over,
  };
}

/** An address's queue counters: events stored and their bytes (data, metadata and blobs). */
export interface Counters {
  events: number;
  bytes: number;
}

export interface ContractStore {
  readonly store: OpenedStore;
  readonly storage: TestStorage;
  /** A new address on the store (a rate limit that never refuses). */
  address(expiresAt?: number): Promise<AddressRecord>;
  /** Another store instance on the same file or database (closed with the suite). */
  openAnother(): Promise<OpenedStore>;
  /**
   * The counters the store holds for the address, as its row and the invariant of the lazily written
   * SQLite row define them (sqlite-queue-counters.ts): the row counts exactly the events up to its
   * last_sequence, so the events above it are added. PostgreSQL writes the row in every transaction,
   * so nothing is above it there.
   */
  storedCounters(addressId: string): Promise<Counters>;
  /** The address row's counters alone (after `reopen`, a closed store has written every row). */
  rowCounters(addressId: string): Promise<Counters>;
  /** Closes the store (which writes every counter held in memory to its row) and opens it again. */
  reopen(): Promise<void>;
  /** A recount of what the address holds, from the events and the blob rows themselves (not blob_bytes), and its approvals' text. */
  recount(addressId: string): Promise<Counters>;
  /** Rows of a query, the same SQL on both dialects (`?` placeholders). */
  query<T>(sql: string, params: unknown[]): Promise<T[]>;
}

export interface Case {
  name: string;
  /** A reason to skip the case on this store (helpers.ts's onlyPostgres): a capability the other store does not have. */
  skip?: string | false;
  run(c: ContractStore): Promise<void>;
}

/** Runs the cases in order on one store opened for the file (cases keep apart by using addresses of their own). */
export function describeStoreContract(title: string, cases: readonly Case[]): void {
  describe(title, () => {
    let storage: TestStorage;
    let store: OpenedStore;
    const others: OpenedStore[] = [];
    let pgClient: pg.Client | undefined;

    async function query<T>(sql: string, params: unknown[]): Promise<T[]> {
      if (storage.databaseUrl === undefined) {
        // A connection per query: none is left open to keep the WAL when the store closes.
        const db = new Database(join(storage.dataDir, SQLITE_FILE), { readonly: true });
        try {
          return db.prepare(sql).all(...params) as T[];
        } finally {
          db.close();
        }
      }
      if (pgClient === undefined) {
        pgClient = new pg.Client({ connectionString: storage.databaseUrl });
        await pgClient.connect();
      }
      let n = 0;
      return (
        await pgClient.query(
          sql.replace(/\?/g, () => `$${++n}`),
          params,
        )
      ).rows as T[];
    }
    const dialect = () => (storage.databaseUrl === undefined ? 'sqlite' : 'postgres');

    const c: ContractStore = {
      get store() {
        return store;
      },
      get storage() {
        return storage;
      },
      async address(expiresAt) {
        const a = newAddress(expiresAt);
        const r = await store.createAddress(a, { ...RATE, now: Date.now() });
        if (!r.allowed) throw new Error('the test rate limit refused an address');
        return a;
      },
      async openAnother() {
        const s = await openStore(loadConfig(storage.env));
        others.push(s);
        return s;
      },
      async storedCounters(addressId) {
        const bytes = `${jsonBytesSql(dialect(), 'e')} + e.blob_bytes`;
        const [row] = await query<{ events: number | string; bytes: number | string }>(
          `SELECT a.event_count + (SELECT count(*) FROM events e WHERE e.address_id = a.id AND e.sequence > a.last_sequence) AS events,
             a.event_bytes + (SELECT coalesce(sum(${bytes}), 0) FROM events e WHERE e.address_id = a.id AND e.sequence > a.last_sequence) AS bytes
           FROM addresses a WHERE a.id = ?`,
          [addressId],
        );
        if (row === undefined) throw new Error(`no address ${addressId}`);
        return { events: Number(row.events), bytes: Number(row.bytes) };
      },
      async rowCounters(addressId) {
        const [row] = await query<{ events: number | string; bytes: number | string }>(
          'SELECT event_count AS events, event_bytes AS bytes FROM addresses WHERE id = ?',
          [addressId],
        );
        if (row === undefined) throw new Error(`no address ${addressId}`);
        return { events: Number(row.events), bytes: Number(row.bytes) };
      },
      async reopen() {
        await store.close();
        store = await openStore(loadConfig(storage.env));
      },
      async recount(addressId) {
        const [row] = await query<{ events: number | string; bytes: number | string | null }>(
          `SELECT count(*) AS events, coalesce(sum(${jsonBytesSql(dialect(), 'e')}
             + (SELECT coalesce(sum(length(b.bytes)), 0) FROM event_blobs b WHERE b.address_id = e.address_id AND b.sequence = e.sequence)), 0) AS bytes
           FROM events e WHERE e.address_id = ?`,
          [addressId],
        );
        // An address's approvals hold bytes of its quota beside its events (design.md, "Approvals"; approvalBytes).
        const text = (c: string) => (dialect() === 'sqlite' ? `length(CAST(${c} AS BLOB))` : `octet_length(${c})`);
        const [approvals] = await query<{ bytes: number | string | null }>(
          `SELECT coalesce(sum(${text('question')} + coalesce(${text('details')}, 0) + ${text('options')} + ${text('fields')}), 0) AS bytes
           FROM approvals WHERE address_id = ?`,
          [addressId],
        );
        return { events: Number(row?.events ?? 0), bytes: Number(row?.bytes ?? 0) + Number(approvals?.bytes ?? 0) };
      },
      query,
    };

    before(async () => {
      storage = await createTestStorage();
      store = await openStore(loadConfig(storage.env));
    });
    after(async () => {
      await pgClient?.end();
      for (const s of others) await s.close();
      await store.close();
      await storage.drop();
    });

    for (const k of cases) it(k.name, { skip: k.skip ?? false }, () => k.run(c)); // a case skips only with its own reason (two writers need PostgreSQL)
  });
}
