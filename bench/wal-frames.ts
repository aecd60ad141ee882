// WAL frames per commit, the largest part of a durable delivery's cost: what one group commit of deliveries writes to the SQLite WAL,
// for one hot address and spread over 100 addresses. In process, no HTTP: the domain service over a
// real SqliteStore in a temporary directory, batches of 25 deliveries submitted in one turn (one
// commit each, as under the bench's 50 connections). Checkpoints are held off after the first, so
// the WAL only grows: frames = growth / (page size + 24). Each page a commit changes is one frame,
// so this counts the pages a commit writes.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { loadConfig } from '../src/config.js';
import type { AddressRecord } from '../src/domain/model.js';
import { ReturnAddressService } from '../src/domain/return-address-service.js';
import { SqliteStore } from '../src/storage/sqlite/sqlite-store.js';
import { InProcessWakeupHub } from '../src/wakeup/wakeup-hub.js';
import type { Row } from './report.js';

const BATCH = 25;
const WARM_BATCHES = 40;
const BATCHES = 400;
const DATA = { id: 'pi_3NbT2x', amount: 4200, currency: 'eur', customer: { id: 'cus_9s6XKzkNRiz8i3', email: 'agent@example.com' }, livemode: false };

export interface WalFrames {
  addresses: number;
  commits: number;
  deliveries: number;
  framesPerCommit: number;
  framesPerDelivery: number;
  cpuUsPerDelivery: number;
}

async function measure(addresses: number): Promise<WalFrames> {
  const dir = mkdtempSync(join(os.tmpdir(), 'ra-bench-wal-'));
  const path = join(dir, 'return-address.db');
  // The first checkpoint runs at once; the next would be due in 10^9 ms, so the WAL is never restarted.
  const store = new SqliteStore(path, { checkpoint: { intervalMs: 1e9 }, logGroupCommitStats: true });
  try {
    const config = loadConfig({
      BASE_URL: 'http://bench.test',
      DATA_DIR: dir,
      CREATE_RATE_LIMIT: '1000000',
      MAX_EVENTS_PER_ADDRESS: '100000000',
      MAX_BYTES_PER_ADDRESS: String(2 ** 50),
    });
    const service = new ReturnAddressService(store, new InProcessWakeupHub(), config);
    const addrs: AddressRecord[] = [];
    for (let i = 0; i < addresses; i++) addrs.push((await service.createAddress({ name: 'bench' }, '127.0.0.1')).address);
    const stats = (store as unknown as { appendStats: { batches: number; items: number } }).appendStats;
    const batch = () =>
      Promise.all(
        Array.from({ length: BATCH }, () =>
          service.deliverToInbox(addrs[Math.floor(Math.random() * addrs.length)] as AddressRecord, { type: 'payment.succeeded', data: DATA }, undefined),
        ),
      );
    for (let i = 0; i < WARM_BATCHES; i++) await batch();
    const reader = new Database(path, { readonly: true });
    const pageSize = reader.pragma('page_size', { simple: true }) as number;
    reader.close();
    const walBytes = () => statSync(`${path}-wal`).size;
    const before = { wal: walBytes(), batches: stats.batches, items: stats.items, cpu: process.cpuUsage() };
    for (let i = 0; i < BATCHES; i++) await batch();
    const cpu = process.cpuUsage(before.cpu);
    const frames = (walBytes() - before.wal) / (pageSize + 24);
    const commits = stats.batches - before.batches;
    const deliveries = stats.items - before.items;
    return {
      addresses,
      commits,
      deliveries,
      framesPerCommit: frames / commits,
      framesPerDelivery: frames / deliveries,
      cpuUsPerDelivery: (cpu.user + cpu.system) / deliveries,
    };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function walFramesRows(log: (s: string) => void): Promise<{ rows: Row[]; details: WalFrames[] }> {
  const details: WalFrames[] = [];
  const rows: Row[] = [];
  for (const addresses of [1, 100]) {
    const r = await measure(addresses);
    details.push(r);
    log(
      `  WAL frames, ${addresses} address(es): ${r.framesPerCommit.toFixed(1)} per commit of ~${(r.deliveries / r.commits).toFixed(1)} deliveries ` +
        `(${r.framesPerDelivery.toFixed(2)} per delivery); ${r.cpuUsPerDelivery.toFixed(1)} µs CPU per delivery in process`,
    );
    rows.push({
      key: `wal_frames_${addresses}`,
      label: `WAL frames per commit of ${BATCH} deliveries, ${addresses === 1 ? 'one address' : `${addresses} addresses`}`,
      unit: 'frames',
      service: r.framesPerCommit,
      target: 'reported',
      met: true,
      note: `${r.commits} commits, ${r.deliveries} deliveries; ${r.framesPerDelivery.toFixed(2)} frames per delivery; ${r.cpuUsPerDelivery.toFixed(1)} µs CPU per delivery (domain service and store, no HTTP)`,
    });
  }
  return { rows, details };
}
