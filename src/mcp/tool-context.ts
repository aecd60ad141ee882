// What every tool module of the MCP room takes (mcp-tools.ts builds them, claim-tools.ts,
// sender-policy-tools.ts and approval-tools.ts register theirs): the request's context and the
// runner that turns a tool body's JSON text into a result. A leaf, so the tool modules import it
// and not each other.

import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import type { ApprovalService } from '../approvals/approval-service.js';
import type { ClaimService } from '../claims/claim-service.js';
import type { Consumers } from '../consumers/consumers.js';
import type { AddressRecord } from '../domain/model.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';
import type { EpochStore } from '../epoch/epoch-store.js';
import type { SenderPolicies } from '../sender-policy/sender-policies.js';

export interface ToolContext {
  service: ReturnAddressService;
  consumers: Consumers;
  /** claim_events and settle_claim (claim-tools.ts). */
  claims: ClaimService;
  address: AddressRecord;
  emailDomain: string;
  /** Aborts when the HTTP client goes away: long waits end then. */
  signal: AbortSignal;
  log: FastifyBaseLogger;
  /** MAX_EVENT_BYTES: a page is never smaller, so any event fits one. */
  maxEventBytes: number;
  /** The store's epoch and last sequences: results that hand out events carry them in `_meta` (event-results.ts). */
  epochs?: EpochStore;
  /** request_approval and get_approval (approval-tools.ts). */
  approvals?: ApprovalService;
  /** get_sender_policy and set_sender_policy (sender-policy-tools.ts). */
  senderPolicies?: SenderPolicies;
}

/** Runs a tool body that renders the API's JSON text (see buildMcpServer). */
export type RunTool = (tool: string, extra: { signal: AbortSignal }, fn: (signal: AbortSignal) => Promise<string>) => Promise<CallToolResult>;
