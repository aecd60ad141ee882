// Blobs beside events (blobs/event-blob.ts) as both stores keep them: written in the event's
// transaction (only when the event is created, never for a duplicate), read back whole in bounded
// chunks, counted in the address's bytes, and deleted with their event whichever way it goes
// (pruning, retention, address deletion, expiry).
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { BLOB_CHUNK_BYTES, type BlobInput, type BlobName } from '../../src/blobs/event-blob.js';
import { type ContractStore, describeStoreContract, newEvent, ROOMY } from './contract-store.js';

function blob(bytes: Uint8Array, name: BlobName = 'raw', contentType = 'message/rfc822'): BlobInput {
  return { name, contentType, bytes, sha256: createHash('sha256').update(bytes).digest('hex') };
}

/** The blob as the store reads it back, its chunks' sizes beside it; null when the store has none. */
async function read(c: ContractStore, addressId: string, eventId: string, name: BlobName) {
  const b = await c.store.openBlob(addressId, eventId, name);
  if (b === null) return null;
  const chunks: Buffer[] = [];
  for await (const chunk of b.chunks()) chunks.push(chunk);
  return { contentType: b.contentType, size: b.size, sha256: b.sha256, bytes: Buffer.concat(chunks), chunkSizes: chunks.map((x) => x.length) };
}

const blobRows = async (c: ContractStore, addressId: string) =>
  Number((await c.query<{ n: number | string }>('SELECT count(*) AS n FROM event_blobs WHERE address_id = ?', [addressId]))[0]?.n);

describeStoreContract('Store contract: blobs', [
  {
    name: 'stored with the event and read back in chunks of at most BLOB_CHUNK_BYTES; unknown names, events and addresses answer null',
    async run(c) {
      const a = await c.address();
      const raw = randomBytes(2 * BLOB_CHUNK_BYTES + 12_345);
      const att = Buffer.from('a small attachment');
      const e = newEvent(a.id, { blobs: [blob(raw), blob(att, 'attachments/0', 'text/plain')] });
      const r = await c.store.appendEvent(e, ROOMY);
      assert.equal(r.kind, 'created');
      const got = await read(c, a.id, e.id, 'raw');
      assert.ok(got);
      assert.deepEqual(
        { contentType: got.contentType, size: got.size, sha256: got.sha256 },
        { contentType: 'message/rfc822', size: raw.length, sha256: blob(raw).sha256 },
      );
      assert.ok(got.bytes.equals(raw), 'every byte, in order');
      assert.deepEqual(got.chunkSizes, [BLOB_CHUNK_BYTES, BLOB_CHUNK_BYTES, 12_345]);
      const small = await read(c, a.id, e.id, 'attachments/0');
      assert.equal(small?.bytes.toString(), 'a small attachment');
      assert.equal(small?.contentType, 'text/plain');
      assert.equal(await c.store.openBlob(a.id, e.id, 'attachments/1'), null);
      assert.equal(await c.store.openBlob(a.id, newEvent(a.id).id, 'raw'), null);
      const other = await c.address();
      assert.equal(await c.store.openBlob(other.id, e.id, 'raw'), null, "another address's token does not reach it");
      assert.deepEqual(await c.recount(a.id), { events: 1, bytes: Buffer.byteLength(e.data) + raw.length + att.length });
      assert.deepEqual(await c.storedCounters(a.id), await c.recount(a.id));
    },
  },
  {
    name: 'an empty blob reads back empty; a duplicate append writes no blob and keeps the first',
    async run(c) {
      const a = await c.address();
      const e = newEvent(a.id, { dedupeKey: 'once', blobs: [blob(new Uint8Array(0))] });
      assert.equal((await c.store.appendEvent(e, ROOMY)).kind, 'created');
      const empty = await read(c, a.id, e.id, 'raw');
      assert.equal(empty?.size, 0);
      assert.equal(empty?.bytes.length, 0);
      const again = newEvent(a.id, { dedupeKey: 'once', blobs: [blob(Buffer.from('other bytes')), blob(Buffer.from('x'), 'attachments/0')] });
      const dup = await c.store.appendEvent(again, ROOMY);
      assert.ok(dup.kind === 'duplicate');
      assert.equal(dup.event.id, e.id);
      assert.equal(await blobRows(c, a.id), 1);
      assert.equal(await c.store.openBlob(a.id, again.id, 'raw'), null);
      assert.deepEqual(await c.storedCounters(a.id), { events: 1, bytes: Buffer.byteLength(e.data) });
    },
  },
  {
    name: 'blob bytes count toward the byte quota: a blob that does not fit is queue_full, and pruning an acknowledged event frees its blob',
    async run(c) {
      const a = await c.address();
      const limits = { maxEventsPerAddress: 100, maxBytesPerAddress: 1_000 };
      const first = newEvent(a.id, { blobs: [blob(randomBytes(993))] });
      assert.equal((await c.store.appendEvent(first, limits)).kind, 'created', '7 bytes of data and 993 of blob: exactly the quota');
      assert.deepEqual(await c.store.appendEvent(newEvent(a.id, { data: '1' }), limits), { kind: 'queue_full' });
      await c.store.ackEvent(a.id, first.id, Date.now());
      const second = newEvent(a.id, { blobs: [blob(randomBytes(500))] });
      assert.equal((await c.store.appendEvent(second, limits)).kind, 'created');
      assert.equal(await c.store.openBlob(a.id, first.id, 'raw'), null, 'the pruned event took its blob');
      assert.equal(await blobRows(c, a.id), 1);
      assert.deepEqual(await c.storedCounters(a.id), { events: 1, bytes: 507 });
      assert.deepEqual(await c.recount(a.id), { events: 1, bytes: 507 });
    },
  },
  {
    name: 'deleted with the event: retention, address deletion and expiry take the blob rows',
    async run(c) {
      const retained = await c.address();
      const e = newEvent(retained.id, { blobs: [blob(randomBytes(100))] });
      await c.store.appendEvent(e, ROOMY);
      await c.store.ackEvent(retained.id, e.id, 1_000);
      assert.ok((await c.store.deleteAcknowledgedBefore(1_001, 100)) >= 1);
      assert.equal(await blobRows(c, retained.id), 0);
      assert.deepEqual(await c.storedCounters(retained.id), { events: 0, bytes: 0 });

      const deleted = await c.address();
      await c.store.appendEvent(newEvent(deleted.id, { blobs: [blob(randomBytes(100))] }), ROOMY);
      assert.equal(await c.store.deleteAddress(deleted.id), true);
      assert.equal(await blobRows(c, deleted.id), 0);

      const expiring = await c.address(Date.now() + 50);
      await c.store.appendEvent(newEvent(expiring.id, { blobs: [blob(randomBytes(100))] }), ROOMY);
      const cutoff = Date.now() + 100;
      const swept: string[] = [];
      for (let b = await c.store.deleteExpired(cutoff, 100); b.length > 0; b = await c.store.deleteExpired(cutoff, 100)) swept.push(...b);
      assert.ok(swept.includes(expiring.id));
      assert.equal(await blobRows(c, expiring.id), 0);
    },
  },
  {
    name: '30 parallel appends with blobs: each event reads back its own bytes',
    async run(c) {
      const a = await c.address();
      const events = Array.from({ length: 30 }, (_, i) => newEvent(a.id, { blobs: [blob(randomBytes(1_000 + i * 97))] }));
      const rs = await Promise.all(events.map((e) => c.store.appendEvent(e, ROOMY)));
      assert.ok(rs.every((r) => r.kind === 'created'));
      for (const e of events) {
        const got = await read(c, a.id, e.id, 'raw');
        assert.equal(got?.sha256, e.blobs?.[0]?.sha256);
        assert.ok(got?.bytes.equals(Buffer.from(e.blobs?.[0]?.bytes ?? [])));
      }
      assert.equal(await blobRows(c, a.id), 30);
      assert.deepEqual(await c.storedCounters(a.id), await c.recount(a.id));
    },
  },
  {
    name: 'a blob whose event is deleted while it is read: the rest of the read fails instead of ending short',
    async run(c) {
      const a = await c.address();
      const raw = randomBytes(3 * BLOB_CHUNK_BYTES);
      const e = newEvent(a.id, { blobs: [blob(raw)] });
      await c.store.appendEvent(e, ROOMY);
      const b = await c.store.openBlob(a.id, e.id, 'raw');
      assert.ok(b);
      const it = b.chunks()[Symbol.asyncIterator]();
      const first = await it.next();
      assert.equal(first.done, false);
      assert.equal(await c.store.deleteAddress(a.id), true);
      await assert.rejects(async () => {
        for (let r = await it.next(); !r.done; r = await it.next());
      });
    },
  },
]);
