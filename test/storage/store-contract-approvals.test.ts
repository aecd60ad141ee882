// The approval step (approval-model.ts) as both stores take it: SQLite inside its group commit
// (sqlite-appends.ts's approvalItem), PostgreSQL in ra_approval_step. A step changes the approval and
// appends its event in one transaction, only if its condition holds then: an answer while pending,
// before expiry and below max_responses; a cancel while pending before expiry; an expiry once due.
// Parallel answers never record more than max_responses, nor an answer beside a cancel.
import assert from 'node:assert/strict';
import type { ApprovalRecord, ApprovalStep, ApprovalStepKind, ApprovalStepResult } from '../../src/approvals/approval-model.js';
import { newApprovalId } from '../../src/approvals/approval-rules.js';
import { hashSecret } from '../../src/domain/credentials.js';
import type { StoreLimits } from '../../src/domain/ports.js';
import { type ContractStore, describeStoreContract, newEvent, ROOMY } from './contract-store.js';
import { PAGE_BYTES } from './store-records.js';

const T = 1_900_000_000_000;
const TYPES: Record<ApprovalStepKind, string> = { respond: 'approval.decided', cancel: 'approval.cancelled', expire: 'approval.expired' };

async function approval(c: ContractStore, over: Partial<ApprovalRecord> = {}): Promise<ApprovalRecord> {
  const a = await c.address();
  const record: ApprovalRecord = {
    id: newApprovalId(),
    addressId: a.id,
    secretHash: hashSecret('secret'),
    question: 'Deploy?',
    details: null,
    options: [
      { id: 'approve', label: 'Approve' },
      { id: 'deny', label: 'Deny' },
    ],
    fields: [{ name: 'note', label: 'Note', type: 'select', required: true, choices: ['x', 'y'] }],
    maxResponses: 1,
    responses: 0,
    status: 'pending',
    createdAt: T,
    expiresAt: T + 60_000,
    closedAt: null,
    ...over,
  };
  assert.equal(await c.store.createApproval(record), true);
  return record;
}

function step(kind: ApprovalStepKind, a: ApprovalRecord, now: number, answer = 'approve'): ApprovalStep {
  const data = JSON.stringify({ approval_id: a.id, option: answer });
  return { kind, approvalId: a.id, event: newEvent(a.addressId, { type: TYPES[kind], source: 'approval', data, createdAt: now }) };
}

const take = (c: ContractStore, s: ApprovalStep, limits: StoreLimits = ROOMY): Promise<ApprovalStepResult> => c.store.approvalStep(s, limits);

async function state(c: ContractStore, a: ApprovalRecord) {
  const got = await c.store.getApproval(a.id);
  assert.ok(got);
  return got;
}

describeStoreContract('Store contract: approval step', [
  {
    name: 'create and read back: every field as written; unknown address false, unknown id null',
    async run(c) {
      const a = await approval(c, { details: 'the details', maxResponses: 3 });
      assert.deepEqual(await c.store.getApproval(a.id), { approval: a, answers: [] });
      assert.equal(await c.store.createApproval({ ...a, id: newApprovalId(), addressId: 'addr_unknown' }), false);
      assert.equal(await c.store.getApproval(newApprovalId()), null);
    },
  },
  {
    name: 'answer once: the event carries the step key, the approval is decided and keeps the answer; a second answer and a cancel are refused',
    async run(c) {
      const a = await approval(c);
      const s = step('respond', a, T + 1_000);
      const r = await take(c, s);
      assert.ok(r.kind === 'created');
      assert.equal(r.event.dedupeKey, `\u0001approval:${a.id}:1`);
      assert.equal(r.event.sequence, 1);
      const { id, type, source, data, trust, createdAt } = s.event;
      assert.deepEqual(
        { id: r.event.id, type: r.event.type, source: r.event.source, data: r.event.data, trust: r.event.trust, createdAt: r.event.createdAt },
        { id, type, source, data, trust, createdAt },
        'the event as the step gave it',
      );
      const got = await state(c, a);
      assert.deepEqual(
        { status: got.approval.status, responses: got.approval.responses, closedAt: got.approval.closedAt },
        { status: 'decided', responses: 1, closedAt: T + 1_000 },
      );
      assert.deepEqual(got.answers, [{ n: 1, eventId: r.event.id, answer: r.event.data }]);
      assert.deepEqual(await take(c, step('respond', a, T + 2_000, 'deny')), { kind: 'refused' });
      assert.deepEqual(await take(c, step('cancel', a, T + 2_000)), { kind: 'refused' });
      assert.equal((await c.store.listEvents(a.addressId, 0, 10, PAGE_BYTES))?.events.length, 1, 'refusals appended nothing');
      assert.deepEqual(await c.recount(a.addressId), await c.storedCounters(a.addressId));
    },
  },
  {
    name: 'parallel answers: 20 at once on max_responses 1 record one; on max_responses 3 record answers 1, 2 and 3',
    async run(c) {
      for (const max of [1, 3]) {
        const a = await approval(c, { maxResponses: max });
        const rs = await Promise.all(Array.from({ length: 20 }, (_, i) => take(c, step('respond', a, T + 1_000 + i, `o${i}`))));
        const created = rs.flatMap((r) => (r.kind === 'created' ? [r.event] : []));
        assert.equal(created.length, max);
        assert.equal(rs.filter((r) => r.kind === 'refused').length, 20 - max);
        const got = await state(c, a);
        assert.equal(got.approval.status, 'decided');
        assert.equal(got.approval.responses, max);
        assert.deepEqual(
          got.answers.map((x) => x.n),
          Array.from({ length: max }, (_, i) => i + 1),
        );
        assert.deepEqual(got.answers.map((x) => x.eventId).sort(), created.map((e) => e.id).sort());
        assert.deepEqual(created.map((e) => e.dedupeKey).sort(), got.answers.map((x) => `\u0001approval:${a.id}:${x.n}`).sort());
        assert.equal((await c.store.listEvents(a.addressId, 0, 100, PAGE_BYTES))?.events.length, max);
      }
    },
  },
  {
    name: 'parallel answers and cancels: exactly one step wins, and the approval says which',
    async run(c) {
      const a = await approval(c);
      const rs = await Promise.all(Array.from({ length: 20 }, (_, i) => take(c, step(i % 2 === 0 ? 'cancel' : 'respond', a, T + 1_000))));
      const created = rs.flatMap((r) => (r.kind === 'created' ? [r.event] : []));
      assert.equal(created.length, 1);
      const got = await state(c, a);
      assert.equal(got.approval.status, created[0]!.type === 'approval.cancelled' ? 'cancelled' : 'decided');
      assert.equal(got.answers.length, got.approval.status === 'decided' ? 1 : 0);
    },
  },
  {
    name: 'expiry: due approvals soonest first; an expiry before its time, and an answer or cancel at it, are refused; it expires once',
    async run(c) {
      const late = await approval(c, { expiresAt: T - 1_000 });
      const a = await approval(c, { expiresAt: T - 5_000 });
      const notDue = await approval(c, { expiresAt: T + 60_000 });
      const due = (await c.store.dueApprovals(T, 10_000)).map((x) => x.id).filter((id) => [late.id, a.id, notDue.id].includes(id));
      assert.deepEqual(due, [a.id, late.id]);
      assert.deepEqual(await take(c, step('expire', notDue, T + 59_999)), { kind: 'refused' }, 'not yet due');
      assert.deepEqual(await take(c, step('respond', notDue, T + 60_000)), { kind: 'refused' }, 'no answer at the expiry itself');
      assert.deepEqual(await take(c, step('cancel', notDue, T + 60_000)), { kind: 'refused' });
      const expired = await Promise.all(Array.from({ length: 5 }, () => take(c, step('expire', a, T))));
      const made = expired.flatMap((r) => (r.kind === 'created' ? [r.event] : []));
      assert.equal(made.length, 1, 'parallel sweeps expire it once');
      assert.equal(made[0]?.dedupeKey, `\u0001approval:${a.id}:expired`);
      const got = await state(c, a);
      assert.deepEqual([got.approval.status, got.approval.closedAt], ['expired', T]);
      assert.ok(!(await c.store.dueApprovals(T, 10_000)).some((x) => x.id === a.id));
    },
  },
  {
    name: 'an expiry that finds answers closes the approval as decided at its expiry and appends nothing',
    async run(c) {
      const a = await approval(c, { maxResponses: 2 });
      assert.equal((await take(c, step('respond', a, T + 1_000))).kind, 'created');
      assert.deepEqual(await take(c, step('expire', a, T + 70_000)), { kind: 'closed' });
      const got = await state(c, a);
      assert.deepEqual([got.approval.status, got.approval.responses, got.approval.closedAt], ['decided', 1, T + 60_000]);
      assert.equal((await c.store.listEvents(a.addressId, 0, 10, PAGE_BYTES))?.events.length, 1);
    },
  },
  {
    name: 'cancel: the event is appended and the approval closed; answers after it are refused',
    async run(c) {
      const a = await approval(c);
      const r = await take(c, step('cancel', a, T + 1_000));
      assert.ok(r.kind === 'created');
      assert.equal(r.event.dedupeKey, `\u0001approval:${a.id}:cancelled`);
      const got = await state(c, a);
      assert.deepEqual([got.approval.status, got.approval.closedAt, got.answers], ['cancelled', T + 1_000, []]);
      assert.deepEqual(await take(c, step('respond', a, T + 2_000)), { kind: 'refused' });
    },
  },
  {
    name: 'a full queue refuses the answer and leaves the approval pending; a step naming another address is refused',
    async run(c) {
      const a = await approval(c);
      const limits = { maxEventsPerAddress: 2, maxBytesPerAddress: 1 << 30 };
      for (let i = 0; i < 2; i++) assert.equal((await c.store.appendEvent(newEvent(a.addressId), limits)).kind, 'created');
      assert.deepEqual(await take(c, step('respond', a, T + 1_000), limits), { kind: 'queue_full' });
      const got = await state(c, a);
      assert.deepEqual([got.approval.status, got.approval.responses, got.answers], ['pending', 0, []]);
      const other = await c.address();
      const stray = step('respond', a, T + 1_000);
      assert.deepEqual(await take(c, { ...stray, event: { ...stray.event, addressId: other.id } }), { kind: 'refused' });
      assert.equal((await state(c, a)).approval.responses, 0);
    },
  },
]);
