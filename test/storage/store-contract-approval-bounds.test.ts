// The Store port's rule for new approvals (design.md, "Approvals": bounded like the queue), on the
// shared harness (contract-store.ts; npm test runs it on both stores): at most maxPending pending
// approvals per address, and every approval's bytes inside the byte quota beside the events, with
// acknowledged events pruned to make room as an append does; the counters stay exact (a recount).
// Parallel creates, on one instance or (PostgreSQL) two, never pass either bound.
import assert from 'node:assert/strict';
import { type ApprovalLimits, type ApprovalRecord, approvalBytes } from '../../src/approvals/approval-model.js';
import { newApprovalId } from '../../src/approvals/approval-rules.js';
import { hashSecret, newEventId } from '../../src/domain/credentials.js';
import type { NewEvent } from '../../src/domain/model.js';
import type { StoreLimits } from '../../src/domain/ports.js';
import { INBOX_TRUST_JSON, SERVICE_TRUST_JSON } from '../../src/domain/trust.js';
import type { OpenedStore } from '../../src/storage/open-store.js';
import { STORE } from '../helpers.js';
import { type ContractStore, describeStoreContract } from './contract-store.js';
import { PAGE_BYTES } from './store-records.js';

function newApproval(addressId: string, question = 'Approve the purchase?'): ApprovalRecord {
  const now = Date.now();
  return {
    id: newApprovalId(),
    addressId,
    secretHash: hashSecret('aa_approve_secret'),
    question,
    details: 'détails: ünïcode counts in UTF-8 bytes',
    options: [
      { id: 'approve', label: 'Approve' },
      { id: 'deny', label: 'Deny' },
    ],
    fields: [],
    maxResponses: 1,
    responses: 0,
    status: 'pending',
    createdAt: now,
    expiresAt: now + 3_600_000,
    closedAt: null,
  };
}

function newEvent(addressId: string, bytes: number): NewEvent {
  const data = JSON.stringify({ p: 'x'.repeat(Math.max(0, bytes - 8)) });
  return { id: newEventId(), addressId, type: 't', source: 's', data, metadata: null, dedupeKey: null, trust: INBOX_TRUST_JSON, createdAt: Date.now() };
}

const UNLIMITED_BYTES = 1 << 30;

/** The store, and on PostgreSQL a second instance on the same database (SQLite has one writer). */
async function instances(c: ContractStore): Promise<OpenedStore[]> {
  return STORE === 'postgres' ? [c.store, await c.openAnother()] : [c.store];
}

describeStoreContract("Store contract: approvals inside the address's bounds", [
  {
    name: 'the pending cap: 60 parallel creates (two instances on PostgreSQL) store exactly maxPending; a closed one frees a place',
    async run(c) {
      const store = c.store;
      const id = (await c.address()).id;
      const limits: ApprovalLimits = { maxPending: 25, maxBytesPerAddress: UNLIMITED_BYTES };
      const all = await instances(c);
      const results = await Promise.all(Array.from({ length: 60 }, (_, i) => all[i % all.length]!.createApprovalWithin(newApproval(id), limits)));
      const created = results.filter((r) => r.kind === 'created').length;
      assert.equal(created, 25, `created ${created}: ${JSON.stringify(results.map((r) => r.kind))}`);
      assert.ok(
        results.every((r) => r.kind === 'created' || r.kind === 'too_many'),
        'the rest are too_many',
      );
      assert.equal((await store.createApprovalWithin(newApproval(id), limits)).kind, 'too_many');
      // Cancel one: pending 24, one more fits, then the cap holds again.
      const pending = await store.dueApprovals(Date.now() + 7_200_000, 100);
      const mine = pending.filter((a) => a.addressId === id);
      assert.equal(mine.length, 25, 'every stored approval is pending');
      const now = Date.now();
      const cancel = await store.approvalStep(
        {
          kind: 'cancel',
          approvalId: mine[0]!.id,
          event: { ...newEvent(id, 40), type: 'approval.cancelled', source: 'approval', trust: SERVICE_TRUST_JSON, createdAt: now },
        },
        { maxEventsPerAddress: 100, maxBytesPerAddress: UNLIMITED_BYTES },
      );
      assert.equal(cancel.kind, 'created');
      assert.equal((await store.createApprovalWithin(newApproval(id), limits)).kind, 'created');
      assert.equal((await store.createApprovalWithin(newApproval(id), limits)).kind, 'too_many');
    },
  },
  {
    name: 'the byte quota: approvals hold bytes beside the events; a create prunes acknowledged events to make room, else queue_full',
    async run(c) {
      const store = c.store;
      const id = (await c.address()).id;
      const size = approvalBytes(newApproval(id));
      const eventLimits = (maxBytesPerAddress: number): StoreLimits => ({ maxEventsPerAddress: 1000, maxBytesPerAddress });
      const quota = 2 * size + 100;
      const limits: ApprovalLimits = { maxPending: 100, maxBytesPerAddress: quota };
      assert.equal((await store.createApprovalWithin(newApproval(id), limits)).kind, 'created');
      // Fill the rest with events of 100 bytes, then acknowledge them all.
      const events: string[] = [];
      for (;;) {
        const r = await store.appendEvent(newEvent(id, 100), eventLimits(quota));
        if (r.kind !== 'created') {
          assert.equal(r.kind, 'queue_full');
          break;
        }
        events.push(r.event.id);
      }
      assert.equal(events.length, Math.floor((quota - size) / 100), 'the events fit in what the approval left of the quota, exactly');
      for (const e of events) assert.ok(await store.ackEvent(id, e, Date.now()));
      // The second approval needs the acknowledged events' room: the fewest oldest ones are pruned.
      assert.equal((await store.createApprovalWithin(newApproval(id), limits)).kind, 'created');
      const left = (await store.listEvents(id, 0, 100, PAGE_BYTES))?.events.length ?? -1;
      const pruned = events.length - left;
      assert.equal(pruned, Math.ceil((2 * size + events.length * 100 - quota) / 100), `pruned ${pruned} of ${events.length}`);
      // Nothing more to prune for a third: refused, and nothing stored.
      assert.equal((await store.createApprovalWithin(newApproval(id), limits)).kind, 'queue_full');
      // An append is held to the same quota: the approvals' bytes count against it.
      const room = quota - 2 * size - left * 100;
      assert.equal((await store.appendEvent(newEvent(id, room + 1), eventLimits(quota))).kind, left > 0 ? 'created' : 'queue_full');
      assert.deepEqual(await c.recount(id), await c.storedCounters(id), 'the counters hold the events and the approvals, exactly');
    },
  },
  {
    name: 'parallel creates never pass the byte quota; an unknown address is address_gone',
    async run(c) {
      const store = c.store;
      const id = (await c.address()).id;
      const [, other] = await instances(c);
      const size = approvalBytes(newApproval(id, 'q'.repeat(400)));
      const limits: ApprovalLimits = { maxPending: 1000, maxBytesPerAddress: 5 * size + Math.floor(size / 2) };
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) => (other && i % 2 ? other : store).createApprovalWithin(newApproval(id, 'q'.repeat(400)), limits)),
      );
      assert.equal(results.filter((r) => r.kind === 'created').length, 5);
      assert.equal(results.filter((r) => r.kind === 'queue_full').length, 35);
      assert.deepEqual(await store.createApprovalWithin(newApproval('addr_unknown'), limits), { kind: 'address_gone' });
      assert.equal(await store.createApproval(newApproval('addr_unknown')), false);
      // The unbounded createApproval stores and counts all the same: an event of the remaining room no longer fits.
      assert.equal(await store.createApproval(newApproval(id, 'q'.repeat(400))), true);
      assert.equal(
        (await store.appendEvent(newEvent(id, size), { maxEventsPerAddress: 1000, maxBytesPerAddress: limits.maxBytesPerAddress })).kind,
        'queue_full',
      );
      assert.deepEqual(await c.recount(id), await c.storedCounters(id));
    },
  },
]);
