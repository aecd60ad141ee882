import type { EventFilter } from './event-filter.js';
import type { SenderFacts } from './sender-screen.js';

// The records the queue is made of, as the domain sees them. Times are epoch milliseconds;
// `data` and `metadata` stay JSON text from the moment they are validated to the moment they
// are written to a response, so the hot paths never parse and re-serialise a payload.

import type { BlobInput } from '../blobs/event-blob.js';

export interface AddressRecord {
  id: string;
  slug: string;
  name: string;
  taskId: string | null;
  readTokenHash: Buffer;
  inboxSecretHash: Buffer;
  /** The data key of its signing secrets, sealed for its reader and its sender (domain/signing-keys.ts); null for an address older than them. */
  signingKeys: Buffer | null;
  createdAt: number;
  expiresAt: number;
  /** The creating client's IP (written at create for `admin list`; not read back by the service). */
  createdIp?: string | null;
}

export interface EventRecord {
  id: string;
  addressId: string;
  sequence: number;
  type: string;
  source: string;
  /** JSON text of `data`; `null` is stored as the text "null". */
  data: string;
  /** JSON text of an object of strings, or null when absent. */
  metadata: string | null;
  dedupeKey: string | null;
  /** JSON text of the event's `trust` (domain/trust.ts): written by the service, never by a sender. */
  trust: string;
  createdAt: number;
  acknowledgedAt: number | null;
  /** Claims made of the event (src/claims); absent, like the two below, when it was never claimed. */
  deliveryCount?: number;
  /** When it became dead (max_deliveries reached, or nacked as dead): never claimed again. */
  deadAt?: number | null;
  deadReason?: string | null;
  /**
   * When it was stored quarantined: it failed its address's sender policy (design.md, "Sender policy
   * and quarantine"). Absent, like releasedAt, for an event that never was.
   */
  quarantinedAt?: number | null;
  /** When a reader released it from quarantine: from then on it is read like any other event. */
  releasedAt?: number | null;
}

/** Held in quarantine: skipped by default reads, streams, waits, claims and consumers until released. */
export const isHeld = (e: EventRecord): boolean => e.quarantinedAt != null && e.releasedAt == null;

/**
 * A new event as the store receives it: not yet acknowledged, and without the sequence, which the store allocates.
 * `blobs` are written in the same transaction, only when the event is created (not for a duplicate).
 */
export type NewEvent = Omit<EventRecord, 'sequence' | 'acknowledgedAt' | 'deliveryCount' | 'deadAt' | 'deadReason' | 'releasedAt'> & {
  blobs?: readonly BlobInput[];
};

export type AppendResult =
  | { kind: 'created'; event: EventRecord }
  | { kind: 'duplicate'; event: EventRecord }
  /** The address holds the maximum number of events and none of them is acknowledged. */
  | { kind: 'queue_full' }
  /** The address vanished (deleted or swept) between the caller's check and the write. */
  | { kind: 'address_gone' };

export interface EventPageRecord {
  events: EventRecord[];
  /** Whether an event with a sequence greater than the last one returned exists. */
  hasMore: boolean;
}

/** A filtered read's page (Store.scanEvents): the matching events, and where the scan got to. */
export interface ScanPageRecord {
  events: EventRecord[];
  /** The sequence of the last event examined (the cursor it was given when there was none). */
  nextCursor: number;
  /** Events after nextCursor exist (the page or the scan reached its bound). */
  hasMore: boolean;
}

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/** What a sender asks to be stored: the inbox URL's body, or what another way in builds from its request. */
export interface EventInput {
  type?: string;
  source?: string;
  data?: unknown;
  /**
   * `data` already as JSON text, used instead of `data`: the capture URL builds it around a body's own
   * text, so the body's numbers keep every digit the sender wrote. The caller vouches that it is JSON.
   */
  dataJson?: string;
  metadata?: Record<string, string>;
  dedupe_key?: string;
  /** The event's id, allocated by the caller (newEventId) when `data` names it: the URLs of its blobs. */
  id?: string;
  /** Bytes stored beside the event (blobs/event-blob.ts); `data` names them by URL, so `id` must be set. */
  blobs?: readonly BlobInput[];
  /** What the way in proved about the sender (email, capture): judged against the address's sender policy. */
  sender?: SenderFacts;
}

export interface Delivery {
  event: EventRecord;
  duplicate: boolean;
  /** The sender policy's rule a new event failed (it was stored quarantined); absent when it passed. */
  quarantineReason?: string;
}

export interface Page {
  events: EventRecord[];
  nextCursor: number;
  hasMore: boolean;
}

export interface ListQuery {
  after: number;
  limit: number;
  /** Seconds to hold the request when nothing is after the cursor. */
  wait: number;
  /** A tighter byte budget for this page than MAX_PAGE_BYTES (MCP, whose results carry a page twice). */
  maxBytes?: number;
  /** Only matching events (event-filter.ts), evaluated by the store; nextCursor is then the last event examined. */
  filter?: EventFilter;
}
