// events/stream of the Events extension (design.md, "MCP, current revision"): one POST answered as
// an SSE stream that stays open. It opens with notifications/events/active (the starting cursor:
// the client's, or later when maxAgeMs skipped old events; and whether events after the client's
// cursor were skipped), then sends notifications/events/event per event in
// sequence order, each with its cursor, and notifications/events/heartbeat with the position read
// up to after every idle interval. A client that loses the connection opens a new stream with the
// last cursor it saw and misses nothing; cursors carry the store epoch, and one from before a restore
// starts the stream from the start with truncated: true (design.md, "Store epoch"). The domain's EventStream decides what to send and when
// (shared reads, backpressure), exactly as for GET …/events/stream.

import type { ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import { ApiError } from '../domain/errors.js';
import type { EventStream } from '../domain/event-stream.js';
import type { AddressRecord, EventRecord } from '../domain/model.js';
import type { ReturnAddressService } from '../domain/return-address-service.js';
import { UNTRUSTED_CONTENT } from '../domain/trust.js';
import type { EpochStore } from '../epoch/epoch-store.js';
import { isStoreUnavailable } from '../storage/store-unavailable.js';
import { EPOCH_META, epochMeta, epochMetaMembers } from './event-results.js';
import {
  CREDENTIALS_ROTATED,
  cursorOf,
  DEFAULT_HEARTBEAT_MS,
  EventsError,
  MAX_HEARTBEAT_MS,
  MIN_HEARTBEAT_MS,
  NOT_FOUND,
  occurrenceJson,
  RESOURCE_EXHAUSTED,
  readInteger,
  readSubscription,
  staleCursor,
  unavailableEventsError,
} from './events-extension.js';
import { type Start, startOf } from './events-position.js';

/** One SSE message; JSON holds a raw line break only as whitespace between tokens, so it becomes a space. */
const frame = (json: string) => `data: ${json.includes('\n') || json.includes('\r') ? json.replace(/[\r\n]/g, ' ') : json}\n\n`;

interface Open {
  stream: EventStream | undefined;
  res: ServerResponse;
  /** The request's result, the final frame when the server ends the stream. */
  last: string;
}

export class EventStreams {
  private readonly open = new Set<Open>();
  private readonly perAddress = new Map<string, number>();

  constructor(
    private readonly service: ReturnAddressService,
    private readonly epochs: EpochStore,
    private readonly baseUrl: string,
    private readonly maxPerAddress: number,
  ) {}

  /**
   * Validates the subscription (a bad one throws EventsError before any byte is written), then
   * answers `res` as the stream. Every open stream costs a socket and a waiter: at most
   * MAX_STREAMS_PER_ADDRESS per address, beyond which ResourceExhausted.
   */
  async start(address: AddressRecord, id: string | number, params: Record<string, unknown>, res: ServerResponse, log: FastifyBaseLogger): Promise<void> {
    const sub = readSubscription(params);
    const heartbeatMs = readInteger(params, 'heartbeatMs', MIN_HEARTBEAT_MS, MAX_HEARTBEAT_MS, DEFAULT_HEARTBEAT_MS);
    const count = this.perAddress.get(address.id) ?? 0;
    if (count >= this.maxPerAddress) {
      throw new EventsError(
        RESOURCE_EXHAUSTED,
        `This address already has ${this.maxPerAddress} open events/stream requests (MAX_STREAMS_PER_ADDRESS): close one, or poll.`,
        { limit: 'streams', max: this.maxPerAddress },
      );
    }
    // Counted before the read below, so streams starting at once cannot all pass the cap.
    this.perAddress.set(address.id, count + 1);
    let start: Start;
    let epoch: string;
    let head: Record<string, string | number>;
    try {
      epoch = await this.epochs.epoch();
      // A cursor of another epoch (from before a restore) starts again from the start, truncated.
      const stale = staleCursor(sub, epoch);
      start = await startOf(this.service, address, stale ? 0 : sub.cursor, sub.maxAgeMs, Date.now(), true);
      if (stale) start = { ...start, truncated: true };
      head = await epochMeta(this.epochs, address.id);
    } catch (err) {
      this.release(address.id);
      throw err;
    }
    if (res.destroyed) {
      this.release(address.id);
      return;
    }
    const subscriptionId = `"io.modelcontextprotocol/subscriptionId":${JSON.stringify(id)}`;
    const meta = `"_meta":{${subscriptionId}}`;
    // Every notification says the epoch; the first one the address's last sequence too (design.md, "Store epoch").
    const withEpoch = `"_meta":{${subscriptionId},${epochMetaMembers({ [EPOCH_META]: epoch })}}`;
    const entry: Open = { stream: undefined, res, last: frame(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"resultType":"complete",${meta}}}`) };
    this.open.add(entry);
    res.once('close', () => {
      entry.stream?.cancel();
      this.forget(entry, address.id);
    });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' });
    res.write(
      frame(
        `{"jsonrpc":"2.0","method":"notifications/events/active","params":{"cursor":"${cursorOf(start.after, epoch)}","truncated":${start.truncated},` +
          `"notice":${JSON.stringify(UNTRUSTED_CONTENT)},"_meta":{${[subscriptionId, epochMetaMembers(head)].filter(Boolean).join(',')}}}}`,
      ),
    );
    const notify = (method: string, params: string) => frame(`{"jsonrpc":"2.0","method":"notifications/events/${method}","params":{${params},${withEpoch}}}`);
    const eventFrame = (e: EventRecord) => {
      const o = occurrenceJson(e, sub.name, this.baseUrl, epoch);
      return notify('event', o.slice(1, -1));
    };
    const stream = this.service.streamEvents(
      address,
      start.after,
      heartbeatMs,
      {
        send: (events, resume) => {
          const ok = res.write(events.map(eventFrame).join(''));
          if (!ok) res.once('drain', resume);
          return ok;
        },
        heartbeat: () => {
          res.write(notify('heartbeat', `"cursor":"${cursorOf(stream.position, epoch)}"`));
        },
        end: (err) => {
          if (err instanceof ApiError && err.code === 'not_found') {
            res.write(notify('terminated', `"error":{"code":${NOT_FOUND},"message":"NotFound","data":{"reason":"The address was deleted."}}`));
          } else if (err instanceof ApiError && err.code === 'credentials_rotated') {
            // The read token this stream was opened with was rotated away (design.md, "Credential rotation").
            const data = JSON.stringify({ code: err.code, reason: err.message });
            res.write(notify('terminated', `"error":{"code":${CREDENTIALS_ROTATED},"message":"Unauthorized","data":${data}}`));
          } else if (isStoreUnavailable(err)) {
            // A store outage: the stream ends, and a new one from the last cursor may follow after the wait.
            log.warn({ err }, 'events/stream ended: the store is unavailable');
            const e = unavailableEventsError();
            res.write(notify('error', `"error":${JSON.stringify({ code: e.code, message: e.message, data: e.data })}`));
          } else if (err !== undefined) {
            log.error({ err }, 'events/stream failed');
            res.write(notify('error', '"error":{"code":-32603,"message":"Internal error: the stream stopped; open a new one with your last cursor."}'));
          }
          // The server ends the stream (shutdown, deletion): the final frame is the request's result.
          res.end(entry.last);
          this.forget(entry, address.id);
        },
      },
      sub.filter,
    );
    entry.stream = stream;
    stream.start();
  }

  /** Shutdown: every stream ends with its final frame, so clients reconnect with their cursor. */
  closeAll(): void {
    for (const s of [...this.open]) {
      s.stream?.cancel();
      if (s.res.writableNeedDrain) s.res.destroy();
      else s.res.end(s.last);
    }
    this.open.clear();
    this.perAddress.clear();
  }

  private forget(entry: Open, addressId: string): void {
    if (this.open.delete(entry)) this.release(addressId);
  }

  private release(addressId: string): void {
    const n = (this.perAddress.get(addressId) ?? 1) - 1;
    if (n <= 0) this.perAddress.delete(addressId);
    else this.perAddress.set(addressId, n);
  }
}
