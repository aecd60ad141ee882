// The ceiling: a bare Fastify 5 app in its own process doing the least a delivery endpoint must
// do over HTTP (parse JSON, validate the CreateEvent body with the service's own schema, answer
// 202 with an event-shaped body), storing nothing; and a GET answering a fixed page of events.
// Whatever the service achieves is measured against this, on the same machine in the same run.
//   PORT=… node dist/bench/ceiling-server.js
import Fastify from 'fastify';
import { newEventId } from '../src/domain/credentials.js';
import { CreateEventBody } from '../src/http/schemas.js';

const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 });
let sequence = 0;
/** The JSON text the GET route answers: set by the bench to the service's real page of 50 events. */
let page = '{"events":[],"next_cursor":0,"has_more":false}';

app.post<{ Params: { addressId: string; secret: string }; Body: { type?: string; source?: string; data?: unknown } }>(
  '/api/v1/inbox/:addressId/:secret',
  { schema: { body: CreateEventBody } },
  async (request, reply) => {
    const b = request.body;
    sequence++;
    const now = Date.now();
    const event = {
      // The service's own id generator: a CSPRNG call per id (a system call on this VM) cost the
      // ceiling ~13 µs of CPU per request, which the service avoids with a pool; so must the ceiling.
      id: newEventId(now),
      address_id: request.params.addressId,
      sequence,
      type: b.type ?? 'message.received',
      source: b.source ?? 'https',
      data: b.data ?? null,
      created_at: new Date(now).toISOString(),
    };
    return reply.code(202).send({ event, duplicate: false });
  },
);

app.get('/api/v1/addresses/:addressId/events', async (_request, reply) => {
  return reply.type('application/json; charset=utf-8').send(page);
});

app.put('/bench/page', { bodyLimit: 8 * 1024 * 1024 }, async (request, reply) => {
  page = JSON.stringify(request.body);
  return reply.code(204).send();
});

const port = Number(process.env.PORT ?? 0);
app.listen({ port, host: '127.0.0.1' }).then(
  (url) => {
    process.stdout.write(`ceiling listening on ${url}\n`);
  },
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
