// GET /api/v1/addresses/{id}/events/stream: the queue as Server-Sent Events (design.md, "Agent toolkit and live view").
// The domain's EventStream decides what to send and when; this file only frames it as SSE and
// bounds what one client may cost: a page is written only once the previous one has drained, and
// a client that has not drained its buffer within SSE_DRAIN_TIMEOUT_MS is dropped.

import type { ServerResponse } from 'node:http';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { FRAME_CACHE_BYTES } from '../../config.js';
import { ApiError, errorBody, INTERNAL_MESSAGE, notFound } from '../../domain/errors.js';
import type { EventStream } from '../../domain/event-stream.js';
import type { EventRecord } from '../../domain/model.js';
import { eventJson } from '../../domain/representation.js';
import { EPOCH_HEADER, EPOCH_RESPONSE_HEADERS, epochHeaderValues, LAST_SEQUENCE_HEADER } from '../../epoch/epoch-headers.js';
import { authenticatedAddress, requireReadToken } from '../plugins/authentication.js';
import { onlyTheseParameters, READ_OPTION_PROPERTIES, readOptions } from '../read-options.js';
import type { AppDeps } from '../route-deps.js';
import { AddressParams, BEARER, errorResponses } from '../schemas.js';
import { StreamLimits } from '../stream-limits.js';

const MAX_CURSOR = Number.MAX_SAFE_INTEGER;

const STREAM_PROPERTIES = {
  after: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: MAX_CURSOR,
      description: 'Send the events whose sequence is greater than this cursor (default 0: the whole queue). A Last-Event-ID header takes precedence.',
    }),
  ),
  ...READ_OPTION_PROPERTIES,
};
export const StreamQuery = Type.Object(STREAM_PROPERTIES, { additionalProperties: false, description: onlyTheseParameters(STREAM_PROPERTIES) });

const StreamHeaders = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({
      pattern: '^[0-9]{1,16}$',
      description:
        'The id of the last event received (its sequence), which a reconnecting EventSource sends: the stream resumes after it. Takes precedence over ?after.',
    }),
  ),
});

/**
 * One SSE message per event: `id` is the sequence, `data` the Event as GET …/events returns it, byte
 * for byte. JSON text holds a raw line break only as whitespace between tokens (a capture's breaks
 * are stored as spaces; older events may hold some): such a break becomes a space, which keeps every
 * other byte, digits included, where re-serialising would round a large integer.
 */
function eventFrame(e: EventRecord): string {
  let json = eventJson(e);
  if (json.includes('\n') || json.includes('\r')) json = json.replace(/[\r\n]/g, ' ');
  return `id: ${e.sequence}\nevent: event\ndata: ${json}\n\n`;
}

/**
 * Frames rendered once and shared by every stream that sends the same event: each socket's write
 * queue then references one Buffer instead of holding a copy of its own (2,000 streams of a 1 MiB
 * event held +932 MB when each rendered its own). Keyed by event id and acknowledgement (the only
 * part of an event that changes), so streams at different cursors, or on a store that builds new
 * records per read (PostgreSQL), still share. Least recently used out past FRAME_CACHE_BYTES.
 */
const frameCache = new Map<string, Buffer>();
let frameCacheBytes = 0;
function frameOf(e: EventRecord): Buffer {
  const key = `${e.id} ${e.acknowledgedAt ?? ''}`;
  let frame = frameCache.get(key);
  if (frame !== undefined) {
    frameCache.delete(key);
  } else {
    frame = Buffer.from(eventFrame(e));
    frameCacheBytes += frame.length;
  }
  frameCache.set(key, frame);
  for (const [oldest, f] of frameCache) {
    if (frameCacheBytes <= FRAME_CACHE_BYTES || oldest === key) break;
    frameCache.delete(oldest);
    frameCacheBytes -= f.length;
  }
  return frame;
}

const errorFrame = (code: Parameters<typeof errorBody>[0], message: string) => `event: error\ndata: ${JSON.stringify(errorBody(code, message))}\n\n`;

interface OpenStream {
  stream: EventStream;
  res: ServerResponse;
}

export const eventStreamRoutes =
  ({ service, config, consumers, epochs }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    const auth = requireReadToken(service);
    const streams = new Set<OpenStream>();
    const limits = new StreamLimits(config);

    // Streams are not idle connections, so closing the server would wait for them: end them first.
    // (The hub's shutdown has ended every stream that was waiting; this catches one blocked on a
    // full buffer or between reads.)
    app.addHook('preClose', (done) => {
      for (const s of [...streams]) {
        s.stream.cancel();
        if (s.res.writableNeedDrain) s.res.destroy();
        else s.res.end(': shutting down\n\n');
      }
      streams.clear();
      done();
    });

    app.get(
      '/api/v1/addresses/:addressId/events/stream',
      {
        onRequest: auth,
        schema: {
          operationId: 'streamEvents',
          summary: 'Stream the event queue live (Server-Sent Events)',
          description:
            'A text/event-stream of every event with sequence > after, in order and without a gap, then each new one as it is ' +
            'committed; resume with `Last-Event-ID` (or `?after=`). Message format, heartbeats, filters, consumers and the stream limits ' +
            `(one more than MAX_STREAMS_PER_ADDRESS = ${config.maxStreamsPerAddress} or MAX_STREAMS_PER_CLIENT = ${config.maxStreamsPerClient} is 429 too_many_streams): ` +
            '/llms-full.txt, section "Live event stream".',
          tags: ['events'],
          security: BEARER,
          params: AddressParams,
          querystring: StreamQuery,
          headers: StreamHeaders,
          response: {
            200: {
              description: 'The event stream. Its first comment names the address, the cursor, the store epoch and the last sequence, as the headers do.',
              headers: EPOCH_RESPONSE_HEADERS,
              content: {
                'text/event-stream': {
                  schema: Type.String({
                    description:
                      'Server-Sent Events: messages of `id`, `event: event` and `data` lines; `: ping` comments. A stream the server ends for a reason ' +
                      'ends with one `event: error` message whose data is the error body: `not_found` (the address was deleted), ' +
                      '`credentials_rotated` (the read token the stream was opened with was rotated: open it again with the new one), `internal`.',
                  }),
                },
              },
            },
            ...errorResponses(400, 401, 404, 409, 429),
          },
        },
      },
      (request, reply) => {
        const address = authenticatedAddress(request);
        const { filter, consumer } = readOptions(request);
        const lastEventId = request.headers['last-event-id'];
        const given = lastEventId !== undefined ? Number(lastEventId) : request.query.after;
        if (given !== undefined && given > MAX_CURSOR) {
          throw new ApiError('invalid_request', `Invalid header 'Last-Event-ID': must be an integer from 0 to ${MAX_CURSOR}, written in plain decimal digits.`);
        }
        // Every open stream costs a socket, a waiter and its buffered frames: bounded per address and per client.
        const hold = request.raw.method !== 'HEAD';
        const release = limits.admit(address.id, request.ip, hold);
        if (hold) reply.raw.once('close', release);
        // The store's epoch and the address's last sequence head the stream (design.md, "Store epoch").
        const fail = (err: unknown) => (reply as FastifyReply).send(err);
        const withEpoch = (after: number) => epochHeaderValues(epochs, address.id).then((v) => (v ? open(after, v) : fail(notFound('Address'))), fail);
        if (consumer === undefined) return void withEpoch(given ?? 0);
        // The position is stored (when given) before the stream starts.
        consumers.start(address, consumer, given).then(withEpoch, fail);

        function open(after: number, epoch: { epoch: string; lastSequence: number }): void {
          // The client left while the consumer's position was being stored: no 'close' would come now.
          if (reply.raw.destroyed) return;
          reply.hijack();
          const res = reply.raw;
          res.writeHead(200, {
            'content-type': 'text/event-stream; charset=utf-8',
            'cache-control': 'no-store',
            // A reverse proxy (nginx) must pass each message on at once.
            'x-accel-buffering': 'no',
            // A stream's connection is not reused: once it ends, nothing holds a server shutdown.
            connection: 'close',
            [EPOCH_HEADER]: epoch.epoch,
            [LAST_SEQUENCE_HEADER]: String(epoch.lastSequence),
          });
          // HEAD (which Fastify routes here too) gets the headers only: no body, so nothing to hold open.
          if (request.raw.method === 'HEAD') return void res.end();
          res.write(`retry: 1000\n: stream of ${address.id} after ${after} epoch ${epoch.epoch} last_sequence ${epoch.lastSequence}\n\n`);

          const opened = performance.now();
          let drainTimer: NodeJS.Timeout | undefined;
          const entry: OpenStream = {
            res,
            stream: service.streamEvents(
              address,
              after,
              config.sseHeartbeatMs,
              {
                send(events, resume) {
                  let writable = true;
                  res.cork();
                  for (const e of events) writable = res.write(frameOf(e));
                  res.uncork();
                  if (writable) return true;
                  // Nothing more is read for this client until it has taken what it was given.
                  drainTimer = setTimeout(() => {
                    request.log.info({ addressId: address.id, buffered: res.writableLength }, 'event stream dropped: the client did not read');
                    res.destroy();
                  }, config.sseDrainTimeoutMs);
                  res.once('drain', () => {
                    clearTimeout(drainTimer);
                    resume();
                  });
                  return false;
                },
                heartbeat() {
                  res.write(': ping\n\n');
                },
                end(err) {
                  streams.delete(entry);
                  if (err === undefined) {
                    res.end(': shutting down\n\n');
                  } else if (err instanceof ApiError) {
                    res.end(errorFrame(err.code, err.message));
                  } else {
                    request.log.error({ err }, 'event stream failed');
                    res.end(errorFrame('internal', INTERNAL_MESSAGE));
                  }
                },
              },
              filter,
            ),
          };
          streams.add(entry);
          res.once('close', () => {
            clearTimeout(drainTimer);
            entry.stream.cancel();
            streams.delete(entry);
            // A hijacked reply gets no "request completed" line from Fastify: this is that line.
            request.log.info(
              { addressId: address.id, from: after, to: entry.stream.position, responseTime: performance.now() - opened },
              'event stream closed',
            );
          });
          entry.stream.start();
        }
      },
    );
  };
