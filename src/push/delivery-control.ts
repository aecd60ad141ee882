// The bodies a subscription gets besides its events, asked of whoever defines them (MCP's Events
// extension: mcp/webhook-control.ts, wired in compose.ts; this room imports nothing from mcp/).
// The runner (push-runner.ts) sends them over the same signed path as events: a `gap` before
// delivery resumes past events that were skipped (pruned before delivery, a 413 given up, a store
// restored from a backup), a `terminated` when the subscription ended with its address. A
// subscription the control does not cover (one made by the REST API) gets plain Events only.
import type { AddressRecord, EventRecord } from '../domain/model.js';

/** One control POST: its webhook-id, body and extra headers. */
export interface ControlPost {
  messageId: string;
  body: string;
  headers: Record<string, string>;
}

export interface DeliveryControl {
  /** Whether this subscription gets control bodies. */
  covers(subscriptionId: string): boolean;
  /** The store's epoch (a restore replaces it; design.md, "Store epoch"). */
  epoch(): Promise<string>;
  /**
   * When retention removed events right after `cursor` (before `shown`, the first event the
   * delivery's read gave, or with none shown), the last sequence removed; null when nothing was.
   */
  prunedUpTo(address: AddressRecord, cursor: number, shown: EventRecord | undefined): Promise<number | null>;
  /** The body saying delivery resumes after `cursor`, events before it skipped; the same webhook-id on every retry. */
  gap(subscriptionId: string, cursor: number, epoch: string): ControlPost;
  /** The body saying the subscription no longer exists because its address does not. */
  terminated(subscriptionId: string): ControlPost;
}
