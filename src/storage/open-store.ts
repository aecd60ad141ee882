// Picks the backend from configuration: PostgreSQL when DATABASE_URL is set, else SQLite under DATA_DIR.
import { join, resolve } from 'node:path';
import type { ApprovalStore } from '../approvals/approval-store.js';
import type { ClaimStore } from '../claims/claim-store.js';
import type { Config } from '../config.js';
import type { ConsumerPositions } from '../consumers/consumer-positions.js';
import type { Log, Store } from '../domain/ports.js';
import type { EpochStore } from '../epoch/epoch-store.js';
import type { SubscriptionStore } from '../push/subscription-store.js';
import type { CredentialStore } from '../rotation/rotation-store.js';
import type { SenderPolicyStore } from '../sender-policy/sender-policy-store.js';
import { SqliteStore } from './sqlite/sqlite-store.js';

export const SQLITE_FILE = 'return-address.sqlite';

/** A store as the composition opens it: the Store port, and the ports of the rooms that own theirs beside it. */
export type OpenedStore = Store &
  ClaimStore &
  ApprovalStore & {
    /** Named consumers' positions (src/consumers/). */
    readonly consumers: ConsumerPositions;
    readonly senderPolicies: SenderPolicyStore;
    /** Webhook subscriptions (src/push/). */
    readonly subscriptions: SubscriptionStore;
    /** Credential rotation (src/rotation/). */
    readonly credentials: CredentialStore;
    /** The store's epoch and last sequences (src/epoch/). */
    readonly epochs: EpochStore;
  };

export async function openStore(config: Config, log?: Log): Promise<OpenedStore> {
  if (config.databaseUrl !== undefined) {
    const { PostgresStore } = await import('./postgres/postgres-store.js');
    const store = new PostgresStore({
      connectionString: config.databaseUrl,
      poolSize: config.pgPoolSize,
      readPoolSize: config.pgReadPoolSize,
      statementTimeoutMs: config.pgStatementTimeoutMs,
      log,
    });
    try {
      await store.migrate();
    } catch (err) {
      await store.close(); // no pool left open behind a failed start
      throw err;
    }
    return store;
  }
  const store = new SqliteStore(join(resolve(config.dataDir), SQLITE_FILE), { log, logGroupCommitStats: config.logGroupCommitStats });
  await store.migrate();
  return store;
}
